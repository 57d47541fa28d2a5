// Package dialecttest holds, for tests, what a test needs to speak each API
// dialect through the gateway to the fake provider: how a client asks (a
// path, a body, a key), the script words that make the fake answer with each
// fault in the dialect's own words, and how to read an answer back (its
// text, its usage, an error in the dialect's shape, a stream and the error
// frame that ends it). It lets one table of tests run once per dialect
// instead of being copied for each.
//
// One file per dialect (openai.go, anthropic.go, azure.go, gemini.go) holds
// its Speaker; All lists them. A dialect added to Sluice (Bedrock, Vertex
// AI) adds its file and its entry in All, and every table that ranges over
// All tests it.
//
// The package is imported only by tests. It does not import the dialect
// package, so that the dialect package's own tests may import it.
package dialecttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/fake"
)

// All returns the Speaker of every dialect, in a fixed order.
func All() []Speaker {
	return []Speaker{
		OpenAI,
		Anthropic,
		Azure,
		Gemini,
		Bedrock,
		Vertex,
	}
}

// Words are the pieces of text of the fake's answer of 5 events (its
// default), one piece per event; joined, "This is a fake answer.".
var Words = []string{"This", " is", " a", " fake", " answer."}

// Text is the whole text of the fake's answer of 5 events.
var Text = strings.Join(Words, "")

// Speaker is one dialect as a test speaks it. Its fields are set for every
// dialect but Prepare, which only the dialects that sign their requests set.
type Speaker struct {
	// Kind is the provider kind a config names the dialect by (openai).
	Kind string

	// Model is the model a call names; Fallback another model of the
	// dialect, the one a route's fallback asks for instead.
	Model, Fallback string

	// Call returns a client's call to model: a streamed one when stream
	// is true. Its body asks for at most MaxTokens output tokens.
	Call func(model string, stream bool) Call

	// KeyHeader is the header a client sends its API key in, and the
	// provider reads its key from; KeyPrefix goes before the key there
	// ("Bearer "). KeyHeader is "" for a dialect that signs its requests
	// instead.
	KeyHeader, KeyPrefix string

	// Scripts are the fake's script steps that make it answer with each
	// fault, as the dialect's provider does.
	Scripts Scripts

	// InvalidType is the type of the error the fake gives a caller's bad
	// request (Scripts.Invalid) as Error reads it: OpenAI's and
	// Anthropic's error type, Google's status name.
	InvalidType string

	// Answer reads a whole (not streamed) answer.
	Answer func(body []byte) (Answer, error)

	// Stream reads a streamed answer, whole or cut.
	Stream func(body []byte) (Stream, error)

	// Error reads an error body in the dialect's shape: the provider's
	// own, or one the gateway made (whose Code is then the gateway's
	// code, such as provider_down).
	Error func(body []byte) (Error, error)

	// Quota reports whether an error body says, in the dialect's words,
	// that a quota or a credit is used up: what the fake sends for
	// Scripts.Quota.
	Quota func(body []byte) bool

	// ModelOf returns the model a request the fake received names, where
	// the dialect names it: the body's "model", Gemini's path, Azure's
	// deployment.
	ModelOf func(r fake.Request) string

	// Prepare, if not nil, readies a fake for the dialect (the
	// credentials it checks a request's signature or token against) and
	// returns what a provider pointed at it needs beyond its kind and
	// base URL. A test calls it for every fake it starts (a fallback's
	// too). Nil for the dialects whose clients send a key.
	Prepare func(t testing.TB, up *fake.Server) Upstream
}

// MaxTokens is the output limit of every Call's body.
const MaxTokens = 64

// Call is a client's call: a POST of Body to Path, under a route's prefix.
type Call struct {
	// Path is the call's path under the route, with its query
	// ("/v1/chat/completions", Gemini's "…:streamGenerateContent?alt=sse").
	Path string
	// Body is the call's JSON body.
	Body string
}

// URLPath returns the call's path without its query: the path the fake
// receives.
func (c Call) URLPath() string {
	p, _, _ := strings.Cut(c.Path, "?")
	return p
}

// Scripts are script steps of the fake (fake.ParseScript) that make it
// answer as the dialect's provider does.
type Scripts struct {
	// Retryable is a failure worth retrying: the provider is down or
	// overloaded (503; Anthropic's 529).
	Retryable string
	// Invalid is a caller's error, never retried (400).
	Invalid string
	// Quota is a used-up quota or credit in the dialect's words, a 429
	// never retried and never counted by a breaker.
	Quota string
	// Cut is a streamed answer whose connection closes after its first
	// two pieces of text (Words[:2]), without the stream's end.
	Cut string
	// Stall is a streamed answer that falls silent after its first two
	// pieces of text, its connection left open.
	Stall string
	// FirstEventError is a failure a streamed call meets before any byte
	// of its answer: a 200 stream whose first event is the provider's
	// overloaded error.
	FirstEventError string
}

// Upstream is what a provider of a dialect that signs its requests needs
// beyond its kind and base URL.
type Upstream struct {
	// Region is the provider's region; "" for none.
	Region string
	// CredentialsFile is the file of the gateway's own credentials (a
	// service-account JSON file); "" for the credential chain.
	CredentialsFile string
	// Env is what the gateway's environment must hold (the AWS credential
	// chain's variables); nil for nothing. A gateway has one environment
	// for all its providers: Prepare gives the same Env for every fake.
	Env map[string]string
}

// Answer is what a whole answer says.
type Answer struct {
	// Text is the answer's text.
	Text string
	// Model is the model the answer names.
	Model string
	// Input and Output are the prompt and completion tokens its usage
	// reports.
	Input, Output int64
}

// Stream is what a streamed answer says.
type Stream struct {
	// Events is the number of events read.
	Events int
	// Pieces are the answer's text, one piece per event that carried some.
	Pieces []string
	// End reports that the dialect's terminal event was read: the answer
	// is whole (OpenAI's [DONE], Anthropic's message_stop, a Gemini chunk
	// with a finishReason).
	End bool
	// Errors is the number of error events read.
	Errors int
	// Err is the error the last event holds, when the last event is an
	// error frame; nil otherwise.
	Err *Error
}

// Text returns the stream's text: its pieces joined.
func (s Stream) Text() string { return strings.Join(s.Pieces, "") }

// String describes the stream for a test's failure message.
func (s Stream) String() string {
	last := "no error frame last"
	if s.Err != nil {
		last = fmt.Sprintf("last an error frame %+v", *s.Err)
	}
	return fmt.Sprintf("%d events, pieces %q, end %v, %d error events, %s", s.Events, s.Pieces, s.End, s.Errors, last)
}

// Error is an error body as a dialect shapes it.
type Error struct {
	// Type is OpenAI's and Anthropic's error type, Google's status name
	// (RESOURCE_EXHAUSTED).
	Type string
	// Code is the error's machine-readable code: OpenAI's code, Anthropic's
	// type, the reason of Google's ErrorInfo; for an error the gateway
	// made, the gateway's code (stream_cut, provider_down); "" when the
	// body has none.
	Code string
	// Status is the HTTP status a Google error carries, 0 in the other
	// dialects.
	Status int
	// Message is the error's message.
	Message string
}

// event is one server-sent event.
type event struct {
	name string // its event: line, "" when none
	data []byte // its data lines, joined by newlines
}

// sseEvents splits a body of server-sent events into its events, skipping
// comments and events without data.
func sseEvents(body []byte) []event {
	var out []event
	body = bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n"))
	for block := range bytes.SplitSeq(body, []byte("\n\n")) {
		var ev event
		var data [][]byte
		for line := range bytes.SplitSeq(block, []byte("\n")) {
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			switch string(field) {
			case "event":
				ev.name = string(value)
			case "data":
				data = append(data, value)
			}
		}
		if data != nil {
			ev.data = bytes.Join(data, []byte("\n"))
			out = append(out, ev)
		}
	}
	return out
}

// isErrorData reports whether an event's data is a JSON object with an
// "error" member, as OpenAI-style and Google error events are.
func isErrorData(data []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return false
	}
	_, ok := m["error"]
	return ok
}

// modelInBody returns the "model" of a JSON request body, "" when none.
func modelInBody(r fake.Request) string {
	var v struct{ Model string }
	json.Unmarshal(r.Body, &v)
	return v.Model
}

// quoted returns s as a JSON string.
func quoted(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// decode unmarshals body into v, naming the shape it wanted when it fails.
func decode(body []byte, v any, shape string) error {
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("not %s: %w: %.200q", shape, err, body)
	}
	return nil
}

var errNoMessage = errors.New("an error without a message")

// SetKey sets key in h where the dialect's clients send it; it does
// nothing for a dialect that signs.
func (s Speaker) SetKey(h http.Header, key string) {
	if s.KeyHeader != "" {
		h.Set(s.KeyHeader, s.KeyPrefix+key)
	}
}

// Key returns the key a request's header h carries where the dialect's
// provider reads it, "" when none.
func (s Speaker) Key(h http.Header) string {
	if s.KeyHeader == "" {
		return ""
	}
	v, ok := strings.CutPrefix(h.Get(s.KeyHeader), s.KeyPrefix)
	if !ok {
		return ""
	}
	return v
}

// errNotA says that body is not the shape wanted.
func errNotA(shape string, body []byte) error {
	return fmt.Errorf("not a %s: %.200q", shape, body)
}
