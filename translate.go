package sluice

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/chat"
)

// A call whose fallback speaks another dialect than the call's is
// translated through the one chat model (dialect/chat): the client's
// request is read by its dialect's codec and written by the target's, and
// the target's answer — a whole body, a stream event by event, or an
// error — read by the target's codec and written by the client's. A
// request the target's dialect cannot express skips the target without a
// call.

// codecOf returns the chat codec of dialect d, nil when d has none of
// its own (Vertex AI, whose targets speak their publisher's: targetCodec).
// Azure OpenAI's bodies are OpenAI's.
func codecOf(d dialect.Dialect) chat.Codec {
	switch d {
	case dialect.OpenAI, dialect.Azure:
		return chat.OpenAI
	case dialect.Anthropic:
		return chat.Anthropic
	case dialect.Gemini:
		return chat.Gemini
	case dialect.Bedrock:
		return chat.Bedrock
	}
	return nil
}

// targetCodec returns the chat codec that writes a request to a target
// of dialect d for model and reads its answers: on Vertex AI, the model's
// publisher's (Anthropic's for claude-…, else Gemini's); elsewhere d's
// own (codecOf).
func targetCodec(d dialect.Dialect, model string) chat.Codec {
	if d != dialect.Vertex {
		return codecOf(d)
	}
	if vertexClaude(model) {
		return chat.Anthropic
	}
	return chat.Gemini
}

// vertexClaude reports whether model is one of Anthropic's Claude models
// on Vertex AI (claude-…, claude-sonnet-4-5@20250929), which Vertex
// serves under the publisher anthropic; any other model is Google's.
func vertexClaude(model string) bool { return strings.HasPrefix(model, "claude-") }

// vertexAnthropicVersion is the "anthropic_version" a Claude model on
// Vertex AI requires in its body, where the Anthropic API takes an
// anthropic-version header.
const vertexAnthropicVersion = "vertex-2023-10-16"

// endpoint returns the URL path (and escaped path) and query of a chat
// request to dialect d for model, streamed or not; ok is false when the
// engine knows no such endpoint of d's.
//
// Azure OpenAI's is its v1 API, /openai/v1/chat/completions, the
// deployment named by the body's model as OpenAI's: it takes no dated
// api-version, which retires, and no deployment in the path.
//
// Vertex AI's lies under a project's location, which the Target's Rewrite
// puts in front ({base}/v1/projects/{project}/locations/{location}):
// /publishers/anthropic/models/{model}:rawPredict or :streamRawPredict
// for a Claude model (vertexClaude), else
// /publishers/google/models/{model}:generateContent or
// :streamGenerateContent?alt=sse.
func endpoint(d dialect.Dialect, model string, stream bool) (path, rawPath, query string, ok bool) {
	switch d {
	case dialect.OpenAI:
		return "/v1/chat/completions", "", "", true
	case dialect.Azure:
		return "/openai/v1/chat/completions", "", "", true
	case dialect.Anthropic:
		return "/v1/messages", "", "", true
	case dialect.Gemini:
		if stream {
			return "/v1beta/models/" + model + ":streamGenerateContent", "", "alt=sse", true
		}
		return "/v1beta/models/" + model + ":generateContent", "", "", true
	case dialect.Vertex:
		switch {
		case vertexClaude(model) && stream:
			return "/publishers/anthropic/models/" + model + ":streamRawPredict", "", "", true
		case vertexClaude(model):
			return "/publishers/anthropic/models/" + model + ":rawPredict", "", "", true
		case stream:
			return "/publishers/google/models/" + model + ":streamGenerateContent", "", "alt=sse", true
		}
		return "/publishers/google/models/" + model + ":generateContent", "", "", true
	case dialect.Bedrock:
		op := "/converse"
		if stream {
			op = "/converse-stream"
		}
		return "/model/" + model + op, "/model/" + url.PathEscape(model) + op, "", true
	}
	return "", "", "", false
}

// vertexBody makes body, an Anthropic messages request written without a
// model, one for a Claude model on Vertex AI: "anthropic_version" first.
func vertexBody(body []byte) []byte {
	const member = `{"anthropic_version":"` + vertexAnthropicVersion + `",`
	if len(body) < 2 || body[0] != '{' || body[1] == '}' { // never: max_tokens is always written
		return body
	}
	return append(append(make([]byte, 0, len(member)+len(body)-1), member...), body[1:]...)
}

// DefaultTranslatedMaxTokens is the output limit a request that names
// none is given when it is translated for an API that requires one
// (Anthropic Messages' max_tokens), or the model's declared Output
// (ModelLimits) when that is less. A longer answer stops with the
// client's max-tokens stop reason; send max_tokens to allow more.
const DefaultTranslatedMaxTokens = 4096

// Translates reports whether a call in dialect from may fall back to a
// Target of dialect to: true for one dialect, and for the pairs the
// engine translates (calls in OpenAI, Azure OpenAI, Anthropic or Gemini;
// targets of OpenAI, Azure OpenAI, Anthropic, Gemini, Vertex AI — either
// publisher, by the target's model — or Bedrock).
func Translates(from, to dialect.Dialect) bool {
	if from == to {
		return true
	}
	_, _, _, ok := endpoint(to, "", false)
	return ok && codecOf(from) != nil && from != dialect.Bedrock
}

// translation is how the current target's requests and answers are
// translated: from the client's dialect to the target's and back.
type translation struct {
	from, to   chat.Codec
	toD        dialect.Dialect // the target's
	req        *chat.Request   // the client's request, as the chat model holds it
	stream     bool            // the client asked for a stream
	label      string          // the Sluice-Translated header's value: from->to
	bedrockOut bool            // the target frames its stream as AWS event-stream frames
	id         string          // the call's request id, the answer's id where the target gives none
}

// SkippedError is why a fallback target was skipped without a call: the
// request asks what the target's dialect cannot express, or what its
// model cannot take (Transport.Models).
type SkippedError struct {
	// Provider is the target's.
	Provider string
	// Err is the reason: wrapping chat.ErrUnsupported, or a *LimitError.
	Err error
}

func (e *SkippedError) Error() string {
	return "sluice: target " + e.Provider + " skipped: " + e.Err.Error()
}

func (e *SkippedError) Unwrap() error { return e.Err }

// translateFor prepares the call's request for target tg, which speaks
// another dialect than the call: its URL (the target's endpoint for its
// model), its headers and its body, set in r, the target's copy of the
// request, whose URL and headers are its own (aim). An error wrapping
// chat.ErrUnsupported says the target cannot take the request.
func (c *call) translateFor(tg *Target, r *http.Request) error {
	model := tg.Model
	if model == "" {
		model = c.in.Model
	}
	from, to := codecOf(c.d), targetCodec(tg.Dialect, model)
	if from == nil || to == nil || c.d == dialect.Bedrock {
		return &chat.UnsupportedError{Dialect: tg.Dialect.Kind(), What: "a request from " + c.d.Kind() + " (not translated yet)"}
	}
	in, err := c.chatRequest()
	if err != nil {
		return err
	}
	path, rawPath, query, ok := endpoint(tg.Dialect, model, in.Stream)
	if !ok {
		return &chat.UnsupportedError{Dialect: tg.Dialect.Kind(), What: "a chat endpoint (not translated yet)"}
	}
	cr := *in
	cr.Model = model
	if cr.MaxTokens == 0 && to == chat.Anthropic {
		cr.MaxTokens = DefaultTranslatedMaxTokens // Anthropic requires one; OpenAI and Gemini clients often send none
		if lim := limitsOf(c.t.modelsOf(c.target), model); lim != nil && lim.Output > 0 {
			cr.MaxTokens = min(cr.MaxTokens, lim.Output) // no more than the model is declared to write
		}
	}
	cr.IncludeUsage = cr.Stream // the target's usage, for the Meter and the client (its encoder writes it as the client asked)
	claudeOnVertex := tg.Dialect == dialect.Vertex && to == chat.Anthropic
	if claudeOnVertex {
		cr.Model = "" // in the path; Vertex AI refuses it in the body
	}
	body, err := to.EncodeRequest(&cr)
	if err != nil {
		return err
	}
	if claudeOnVertex {
		body = vertexBody(body)
	}
	// r and its URL are aim's copies, set in place.
	r.URL.Path, r.URL.RawPath, r.URL.RawQuery = path, rawPath, query
	r.Header.Del("Accept-Encoding") // the answer is read here, so plain
	r.Header.Del("Content-Length")
	r.Header.Set("Content-Type", "application/json")
	if tg.Dialect == dialect.Anthropic && r.Header.Get("Anthropic-Version") == "" {
		r.Header.Set("Anthropic-Version", "2023-06-01")
	}
	c.body, c.model = body, model
	c.xs.xl = &translation{from: from, to: to, toD: tg.Dialect, req: in, stream: in.Stream,
		label: c.d.Kind() + "->" + tg.Dialect.Kind(), bedrockOut: tg.Dialect == dialect.Bedrock, id: c.id}
	return nil
}

// skip logs the current target's skip, one line with outcome skipped, and
// moves the call on to the next target; false when none follows.
func (c *call) skip(n int) bool {
	err := c.xs.skip
	c.xs.skip = nil
	a := Attempt{
		TS: time.Now(), RequestID: c.id, Attempt: n, Policy: c.policy.Name,
		Provider: c.provider, Model: c.model, Method: c.treq.Method, Path: c.treq.URL.Path,
		Outcome: OutcomeSkipped, Error: "skipped: " + err.Error(), Target: c.target, Priority: c.caller.Priority,
	}
	c.t.Log.Write(&a)
	if c.t.Observe != nil {
		c.t.Observe(&a)
	}
	if c.hasNext() && c.timedOut() == nil {
		c.aim(c.target + 1)
		return true
	}
	if c.last == nil && c.lastErr == nil {
		if c.anyway() { // the primary, skipped by its declared limits, called after all
			return true
		}
		c.lastErr = &SkippedError{Provider: c.provider, Err: err}
	}
	return false
}

// errorBody writes the target's error body buf, answered with status, as
// the client's dialect writes one.
func (x *translation) errorBody(status int, buf []byte) []byte {
	e := x.to.DecodeError(status, buf)
	if e.Status == 0 {
		e.Status = status
	}
	return x.from.EncodeError(e)
}

// answer writes the target's whole answer raw as the client's dialect
// writes one.
func (x *translation) answer(raw []byte) ([]byte, error) {
	a, err := x.to.DecodeAnswer(raw)
	if err != nil {
		return nil, err
	}
	a.ID = chat.AnswerID(x.from, a.ID, x.id) // in the client's form, never empty
	return x.from.EncodeAnswer(a)
}

// translateError is an answer of the target that could not be translated.
type translateError struct{ err error }

func (e *translateError) Error() string { return "sluice: translating the answer: " + e.err.Error() }
func (e *translateError) Unwrap() error { return e.err }

// failEvent is the error event of an answer that could not be translated.
func failEvent(err error) chat.Event {
	return chat.Event{Type: chat.EventError, Err: &chat.Error{Status: http.StatusBadGateway, Type: "api_error",
		Message: (&translateError{err}).Error()}}
}

// translateAnswer translates the 2xx answer resp of the current target
// for the caller, as try hands it over: a stream as it is read (head, the
// bytes peek read, first), a whole answer here. b is the engine's body,
// whose Meter count is moved onto the target's raw bytes.
func (c *call) translateAnswer(a *attempt, resp *http.Response, b *body, head []byte) error {
	x := c.xl()
	if b.stream {
		c.startStream(resp, b, x.to, x.req, false)
		return nil
	}
	count := b.count
	b.count = nil
	resp.Header.Del("Content-Length")
	resp.Header.Del("Content-Encoding")
	raw := head
	if !c.t.BufferBody { // read whole here: an answer is translated whole
		var err error
		if raw, err = a.readAll(resp.Body, maxBufferedBody, resp.ContentLength); err != nil {
			return err
		}
	}
	if count != nil {
		count(raw)
	}
	out, err := x.answer(raw)
	if err != nil {
		return &translateError{err}
	}
	b.head, b.n = out, int64(len(raw))
	resp.Header.Set("Content-Type", "application/json")
	resp.Header["Content-Length"] = []string{strconv.Itoa(len(out))}
	resp.ContentLength = int64(len(out))
	return nil
}

// targetDialect returns the dialect the current target speaks.
func (c *call) targetDialect() dialect.Dialect {
	if x := c.xl(); x != nil {
		return x.toD
	}
	return c.d
}

// targetChat returns the chat codec of the current target: its
// translation's (a Vertex AI target's is its publisher's), else the call
// dialect's; nil when it has none.
func (c *call) targetChat() chat.Codec {
	if x := c.xl(); x != nil {
		return x.to
	}
	return codecOf(c.d)
}

// xl returns how the current target is translated, nil when it speaks
// the call's dialect.
func (c *call) xl() *translation {
	if c.xs == nil {
		return nil
	}
	return c.xs.xl
}

// xlState is what a call keeps of its rarer features, behind one pointer
// so that the call stays in its size class: the translation of a target
// of another dialect, the caller's stream written by its codec, its hedge.
type xlState struct {
	read  bool          // the request was read into the chat model
	in    *chat.Request // the request as the chat model reads it
	inErr error         // why it could not be read
	xl    *translation  // how the current target is translated; nil when it speaks the call's dialect
	skip  error         // why the current target cannot take the request; nil when it can
	rs    *chatStream   // the caller's stream, when written by its codec (chatstream.go); nil when not

	// The primary's declared limits (modellimits.go): they had it skipped;
	// it is called after all, every other target skipped.
	limited, anyway bool

	// Hedging (hedge.go).
	lose      context.CancelCauseFunc // cancels the call's attempts when the other call of its hedge won
	lost      atomic.Bool             // the other won: the lines from now on say OutcomeHedgeLost
	refused   atomic.Bool             // the hedge was refused: the next line says HedgeRefused
	hedgeSent bool                    // the call is a hedge: its lines say HedgeSent
}
