package dialect

import (
	"bytes"
	"cmp"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/internal/request"
	"github.com/sluice-llm/sluice/internal/sse"
)

// Vertex is Google Vertex AI, which serves two publishers' models under
// one API, each speaking its own language:
//
//   - Gemini: POST {base}/v1/projects/{project}/locations/{region}/
//     publishers/google/models/{model}:generateContent (and
//     :streamGenerateContent, :countTokens, …; v1beta1 too), Gemini's
//     body, answers, errors and stream;
//   - Anthropic: …/publishers/anthropic/models/{model}:rawPredict and
//     :streamRawPredict, Anthropic's messages body without "model" and with
//     "anthropic_version": "vertex-2023-10-16", Anthropic's answers and
//     events.
//
// The model is in the path, and a fallback's model goes there; a stream is
// asked for by the method. An answer does not say which path it came
// from, so its errors, stream events and usage are read by their shape,
// through Gemini's and Anthropic's own readers. Vertex takes no key: each
// request carries an OAuth2 bearer token from Application Default
// Credentials (its Signer is googleauth.New, in package dialect/googleauth).
// A client sends a bearer token of its own, which is
// the gateway's client key.
var Vertex Dialect = vertex{}

type vertex struct{}

// Kind is "vertex".
func (vertex) Kind() string { return "vertex" }

// The publishers whose models Vertex serves, as a path names them.
const (
	vertexGoogle    = "google"
	vertexAnthropic = "anthropic"
)

// vertexModel is what a Vertex AI publisher model path says.
type vertexModel struct {
	publisher, model, method string
	start, end               int // where the model lies in the path
	stream                   bool
}

// vertexPath reads a path of the form
// {prefix}/projects/{project}/locations/{region}/publishers/{publisher}/models/{model}:{method}
// whose publisher is google with one of Gemini's methods, or anthropic
// with rawPredict or streamRawPredict. ok is false for any other path.
func vertexPath(p string) (v vertexModel, ok bool) {
	i := strings.Index(p, "/projects/")
	if i < 0 {
		return v, false
	}
	rest := p[i+1:]
	var seg [7]string
	for k := range seg {
		s, tail, found := strings.Cut(rest, "/")
		if !found || s == "" {
			return v, false
		}
		seg[k], rest = s, tail
	}
	if seg[0] != "projects" || seg[2] != "locations" || seg[4] != "publishers" || seg[6] != "models" {
		return v, false
	}
	model, method, found := strings.Cut(rest, ":")
	if !found || model == "" || strings.ContainsRune(model, '/') {
		return v, false
	}
	v = vertexModel{publisher: seg[5], model: model, method: method, start: len(p) - len(rest)}
	v.end = v.start + len(model)
	switch v.publisher {
	case vertexGoogle:
		for _, m := range geminiMethods {
			ok = ok || method == m
		}
		v.stream = method == geminiStream
	case vertexAnthropic:
		ok = method == "rawPredict" || method == "streamRawPredict"
		v.stream = method == "streamRawPredict"
	}
	return v, ok
}

func (vertex) owns(p string) bool {
	_, ok := vertexPath(p)
	return ok
}

// address: Vertex AI's endpoint in region (its location), the global
// endpoint for global.
func (vertex) address(region string) (string, bool) {
	if region == "global" {
		return "https://aiplatform.googleapis.com", true
	}
	return "https://" + region + "-aiplatform.googleapis.com", true
}

// Request reads the model and the stream from a publisher model path, the
// output limit from the body (Gemini's generationConfig.maxOutputTokens,
// Anthropic's max_tokens). Anthropic's body may ask for a stream too
// ("stream": true, as its SDK sends with :streamRawPredict). Any other
// path (Vertex's OpenAI-compatible endpoints) is read as OpenAI's.
func (vertex) Request(path string, body []byte) Request {
	r := bodyRequest(path, body)
	v, ok := vertexPath(path)
	if !ok {
		return r
	}
	r.ModelCall = true
	r.Stream = v.stream || (v.publisher == vertexAnthropic && r.Stream)
	r.Operation = geminiOperation(v.method)
	if v.publisher == vertexAnthropic {
		r.Operation = "chat"
	} else {
		n, err := geminiLimit(body)
		r.Ambiguous = cmp.Or(r.Ambiguous, err)
		if r.MaxTokens == 0 {
			r.MaxTokens = n
		}
	}
	r.Model, r.BadModel = v.model, request.CheckModel(v.model)
	if r.BadModel != nil {
		r.Model = ""
	}
	return r
}

// Retarget puts model in a publisher model path, else in the body.
func (vertex) Retarget(path string, body []byte, model string) (string, []byte, bool) {
	v, ok := vertexPath(path)
	if !ok {
		return bodyRetarget(path, body, model)
	}
	return path[:v.start] + model + path[v.end:], body, true
}

// anthropicShaped reports whether an error body, or a stream event's
// data, is Anthropic's, {"type":"error","error":{…}}, rather than
// Google's, {"error":{"code","status",…}}. Vertex answers an Anthropic
// model's own errors in Anthropic's shape, and its own (authentication,
// quota) in Google's.
func anthropicShaped(body []byte) bool {
	if !bytes.Contains(body, []byte(`"type"`)) {
		return false
	}
	var e struct {
		Type string `json:"type"`
	}
	return json.Unmarshal(body, &e) == nil && e.Type == "error"
}

// Judge reads an error in Anthropic's shape as Anthropic does, any other
// as Gemini does (a google.rpc status with its QuotaFailure and
// RetryInfo).
func (vertex) Judge(status int, h http.Header, body []byte) Judgment {
	if anthropicShaped(body) {
		return Anthropic.Judge(status, h, body)
	}
	return Gemini.Judge(status, h, body)
}

// Stream reads Gemini's and Anthropic's server-sent events alike: a
// stream ends on a Gemini chunk with a finishReason or on Anthropic's
// message_stop; an error event says its status in either shape.
func (vertex) Stream(h http.Header) Stream { return newSSEStream(h, classifyVertex) }

// classifyVertex judges an event of either publisher's stream.
func classifyVertex(ev sse.Event) (end bool, status int) {
	if end, status = classifyGemini(ev); end || status != 0 {
		return end, status
	}
	return classifyEvent(ev)
}

// usageMetadata is the member that holds a Gemini answer's usage; in
// quotes, it cannot stand inside a JSON string of an Anthropic answer.
var usageMetadata = []byte(`"usageMetadata"`)

// Usage reads a Gemini answer's usageMetadata as Gemini does, any other
// answer's usage as Anthropic does.
func (vertex) Usage(body []byte) (Usage, bool) {
	if bytes.Contains(body, usageMetadata) {
		return Gemini.Usage(body)
	}
	return Anthropic.Usage(body)
}

// StreamUsage reads a stream's usage with Gemini's reader or Anthropic's,
// picked by the stream's first line (vertexUsage).
func (vertex) StreamUsage() UsageReader { return &vertexUsage{} }

// maxUsagePick is the most bytes vertexUsage keeps while it waits for a
// stream's first line; a longer first line is taken for Gemini's.
const maxUsagePick = 64 << 10

// vertexUsage reads the usage of a stream of either publisher: Anthropic's
// events are named (its first line is event: message_start), Gemini's
// are data alone. The bytes before the first whole line are kept, then
// handed to the reader picked.
type vertexUsage struct {
	from   Dialect     // the dialect whose reader was picked
	r      UsageReader // its reader; nil before the pick, or when it has none
	picked bool
	head   []byte // the bytes before the pick
}

// Write keeps p until the stream's first line is whole, then feeds the
// reader that line picks.
func (u *vertexUsage) Write(p []byte) (int, error) {
	if u.picked {
		if u.r != nil {
			u.r.Write(p)
		}
		return len(p), nil
	}
	u.head = append(u.head, p...)
	first, whole := firstLine(u.head)
	if !whole && len(u.head) < maxUsagePick {
		return len(p), nil
	}
	u.picked, u.from = true, Gemini
	if bytes.HasPrefix(first, []byte("event:")) {
		u.from = Anthropic
	}
	u.r = u.from.StreamUsage()
	if u.r != nil {
		u.r.Write(u.head)
	}
	u.head = nil
	return len(p), nil
}

// Usage is the picked reader's.
func (u *vertexUsage) Usage() (Usage, bool) {
	if u.r == nil {
		return Usage{}, false
	}
	return u.r.Usage()
}

// Events is the picked reader's count.
func (u *vertexUsage) Events() int {
	if u.r == nil {
		return 0
	}
	return u.r.Events()
}

// firstLine returns the first line of an event stream that is neither
// blank nor a comment, and whether it is whole (its end of line read).
func firstLine(b []byte) (line []byte, whole bool) {
	for len(b) > 0 {
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			return b, false
		}
		if l := b[:i]; len(bytes.TrimSpace(l)) > 0 && l[0] != ':' {
			return l, true
		}
		b = b[i+1:]
	}
	return nil, false
}

// Windows reports nothing: Vertex AI sends no rate-limit headers, for
// either publisher's models.
func (vertex) Windows(h http.Header, now time.Time, fn func(Window)) {}

// Client is Vertex AI as its clients speak it: the genai SDK on its
// Vertex AI backend, or Anthropic's Vertex client, each sending an OAuth2
// bearer token of its own.
func (vertex) Client() Client { return vertexClient{} }

// Traits: OpenTelemetry's gcp.vertex_ai, no key header (it signs), and
// a stream that ends before its terminal event was cut (Gemini's clients
// cannot tell).
func (vertex) Traits() Traits {
	return Traits{System: "gcp.vertex_ai", StrictEnd: true, Signs: true}
}

type vertexClient struct{}

// Key returns the bearer token of the Authorization header.
func (vertexClient) Key(r *http.Request) string { return bearerToken(r.Header.Get("Authorization")) }

// SetKey drops every dialect's key header and every credential of the
// query (?key=, ?access_token=, ...) from r, and sets
// key, if any, as its bearer token (the Signer then sets its own).
func (vertexClient) SetKey(r *http.Request, key string) { setKey(r, "Authorization", key) }

// Error is Google's error shape, as Gemini's clients read it: Vertex
// AI's own errors have it, whichever the publisher.
func (vertexClient) Error(h http.Header, status int, code, message string) []byte {
	return Gemini.Client().Error(h, status, code, message)
}

// ErrorEvent is Gemini's: a data event holding Google's error (the genai
// SDK refuses a named event).
func (vertexClient) ErrorEvent(code, message string) []byte {
	return Gemini.Client().ErrorEvent(code, message)
}

// AsksUsage is false: neither publisher's stream takes stream_options.
func (vertexClient) AsksUsage(r *http.Request) bool { return false }

// EscapedModel finds none: no path of this dialect holds an escaped "/".
func (vertexClient) EscapedModel(p string) (start, end int) { return -1, -1 }
