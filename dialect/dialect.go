// Package dialect holds what Sluice knows of each provider API it speaks:
// one file per dialect (openai.go, anthropic.go, gemini.go, azure.go,
// bedrock.go, vertex.go; Bedrock's event-stream frames in a second file,
// bedrock_stream.go),
// each holding where a request names its model and its stream, how the
// provider's errors, quotas, rate limits and overloads look, the stream's
// framing and its terminal event, the usage fields, the rate-limit headers
// and their reset formats, the key's header, its address in a region
// where it has one (RegionalBaseURL), the shape of the gateway's own
// errors in that dialect, and what an attempt's span says of it. What
// several share is apart: server-sent events (sse.go), the usage object
// of OpenAI and Anthropic (usage.go), rate-limit header parsing
// (limits.go), keys in headers and queries (client.go).
//
// The engine, spend, limit, the gateway, tracing and config ask a Dialect
// and never switch on a dialect's name. A Dialect is a stateless value,
// safe for concurrent use. The package imports only the standard library
// and this module's: the Signers of the dialects that sign instead of
// carrying a key (Traits.Signs) need a cloud's SDK, so they live in
// packages of their own, dialect/awssign (Bedrock's SigV4) and
// dialect/googleauth (Vertex AI's OAuth2 tokens), imported by whoever
// calls those providers.
package dialect

import (
	"net/http"
	"time"
)

// Dialect is one provider API's ways.
type Dialect interface {
	// Kind is the name a config gives the dialect (kind: openai).
	Kind() string

	// Request reads what a request says of itself: path is the URL path
	// as sent upstream, body its body (nil when none). It never fails: a
	// model that is not a valid name is left out (Request.BadModel).
	Request(path string, body []byte) Request
	// Retarget returns path and body asking for model instead of the
	// model they name, for a fallback: the model goes where the dialect
	// names it (the path for Gemini, Azure deployments, Bedrock and
	// Vertex, else the body's "model"). body is not changed; a new one is
	// returned when the model goes there. ok is false when neither names
	// a model (the request is then sent as it is).
	Retarget(path string, body []byte, model string) (newPath string, newBody []byte, ok bool)

	// Judge reads an answer the provider gave with status 400 or above:
	// its header (nil for a stream event) and its body, or the data of a
	// stream's error event.
	Judge(status int, h http.Header, body []byte) Judgment
	// Stream returns a reader of the events of the answer whose header is
	// h, or nil when h announces no stream the dialect frames (the answer
	// is then read as a whole body).
	Stream(h http.Header) Stream

	// Usage reads the usage of a whole answer; ok is false when body has
	// none (an error body, not JSON).
	Usage(body []byte) (u Usage, ok bool)
	// StreamUsage returns a reader of the usage of a streamed answer, fed
	// its bytes as they pass.
	StreamUsage() UsageReader

	// Windows calls fn with each rate-limit window the answer's header h
	// reports, as of now.
	Windows(h http.Header, now time.Time, fn func(Window))

	// Client is the dialect as the gateway speaks it to its clients.
	Client() Client
	// Traits are the dialect's fixed facts.
	Traits() Traits
}

// Request is what a request says of itself.
type Request struct {
	// Model is the model the request names, where the dialect names it
	// (the path where it names one, else the body's "model"); "" when it
	// names none or one that is not a valid name.
	Model string
	// BadModel is the reason the model named is not a valid name, nil
	// when it is valid or absent.
	BadModel error
	// Ambiguous is the reason the body is refused before any call, nil
	// when it is not: it names a member the dialect reads (the model, the
	// stream, an output limit) twice, or in another case, so that JSON
	// parsers disagree on what it asks (request.AmbiguousError).
	Ambiguous error
	// Stream reports that the request asks for a streamed answer.
	Stream bool
	// StreamOptions reports that the body carries stream_options.
	StreamOptions bool
	// MaxTokens is the most output tokens the request allows, 0 if it
	// names no limit.
	MaxTokens int64
	// ModelCall reports that the request is a call to a model (a chat,
	// a completion, an embedding): retried by default even though its
	// method is POST, since resending it is safe.
	ModelCall bool
	// Operation is what the call does, as an attempt's span names it
	// (OpenTelemetry's gen_ai.operation.name): chat, text_completion,
	// embeddings, generate_content; "other" when the path says none.
	Operation string
}

// Judgment is what an error answer means beyond its status.
type Judgment struct {
	// Quota reports a used-up quota or credit: waiting will not help, so
	// it is never retried and never counted by the breaker.
	Quota bool
	// Wait is the wait the body asks for (Google's RetryInfo), when
	// HasWait; the headers' Retry-After is read by the engine.
	Wait    time.Duration
	HasWait bool
}

// Event is one event of a streamed answer.
type Event struct {
	// Type is the event's name: the SSE event line, or the event-stream
	// frame's :event-type or :exception-type; "" when it has none.
	Type string
	// Data is the event's payload, valid until the next Feed.
	Data []byte
	// End reports that the event ends a whole answer (OpenAI's [DONE],
	// Anthropic's message_stop, a Gemini chunk with a finishReason,
	// Bedrock's messageStop).
	End bool
	// Status is the HTTP status an error event stands for (an overload as
	// 529, a rate limit as 429, a server error as 500); 0 when the event
	// is not an error.
	Status int
}

// Stream reads the events of one streamed answer as its bytes pass. It is
// not safe for concurrent use.
type Stream interface {
	// Feed reads p, the stream's next bytes, and calls fn with each event
	// they complete, in order, until fn returns false.
	Feed(p []byte, fn func(Event) bool)
	// InEvent reports whether an event has begun and is not yet whole.
	InEvent() bool
	// Events returns the number of events read so far.
	Events() int
	// CloseEvent returns the bytes that end what the stream read so far
	// leaves begun (a blank line for a server-sent event, or a line, cut
	// mid-way), so that an event written after it is read as an event of
	// its own; nil when nothing is, or when the framing cannot close an
	// event cut mid-way (AWS event-stream frames).
	CloseEvent() []byte
}

// UsageReader reads the usage of a streamed answer from its bytes. It is
// not safe for concurrent use.
type UsageReader interface {
	// Write feeds p, the stream's next bytes. It never fails.
	Write(p []byte) (int, error)
	// Usage returns the usage read so far, and whether any was.
	Usage() (Usage, bool)
	// Events returns the number of events read so far: a stream carries
	// about one output token per event, the estimate of its output when
	// it reports no usage.
	Events() int
}

// Window is one rate-limit window an answer's header reports.
type Window struct {
	// Requests reports a window of requests (else of tokens).
	Requests bool
	// Size is the window's size; 0 when the header gives none.
	Size int64
	// Left is what is left of it; -1 when the header does not count it.
	Left int64
	// Reset is how long until the window is full again; 0 when the header
	// gives no sound reset.
	Reset time.Duration
}

// Usage is the token usage a provider reported for one answer.
//
// The providers count cached prompt tokens differently. Anthropic's
// input_tokens excludes them: they are reported apart, as
// cache_read_input_tokens and cache_creation_input_tokens. OpenAI's
// prompt_tokens (Responses API: input_tokens) includes them, and
// prompt_tokens_details.cached_tokens (input_tokens_details.cached_tokens)
// tells how many were read from the cache. Usage keeps each provider's
// Input as reported, copies OpenAI's cached count to CacheRead as well, and
// sets CacheReadInInput so that a price counts those tokens once.
type Usage struct {
	// Input is the prompt tokens. For OpenAI it includes the CacheRead
	// tokens; for Anthropic it does not.
	Input int64
	// Output is the completion tokens.
	Output int64
	// CacheRead is the prompt tokens read from the provider's cache.
	CacheRead int64
	// CacheWrite is the prompt tokens written to the cache.
	CacheWrite int64
	// CacheReadInInput reports that Input already counts the CacheRead
	// tokens.
	CacheReadInInput bool
}

// IsZero reports whether no usage was reported: every count is zero.
func (u Usage) IsZero() bool {
	return u.Input == 0 && u.Output == 0 && u.CacheRead == 0 && u.CacheWrite == 0
}

// Client is a dialect as the gateway speaks it to its clients.
type Client interface {
	// Key returns the API key the request carries where the dialect's
	// clients send it (its key header, and for Gemini ?key=), "" when none.
	Key(r *http.Request) string
	// SetKey drops every credential r carries (every dialect's key
	// header, and a key in the query) and sets key where the provider
	// reads it.
	SetKey(r *http.Request, key string)
	// Error returns the body of an error the gateway answers itself, in
	// the dialect's shape, setting in h the headers that go with it.
	// code is the gateway's machine-readable cause (provider_down).
	Error(h http.Header, status int, code, message string) []byte
	// ErrorEvent returns the event that ends a stream the gateway cannot
	// finish, in the stream's framing.
	ErrorEvent(code, message string) []byte
	// AsksUsage reports whether a streamed request to the provider may
	// carry stream_options.include_usage (a chat completion's, in the
	// dialects that take it), so that the gateway may ask for the usage
	// chunk on the client's behalf.
	AsksUsage(r *http.Request) bool
	// EscapedModel returns where, in p, a request's escaped path as the
	// client sent it (a route's prefix stripped), lies a model whose
	// escaped "/" (%2F) is part of it, not a path's: a Bedrock model ARN,
	// which the AWS SDKs send as one escaped segment. start is -1 when
	// p holds none; a gateway refuses an escaped "/" anywhere else.
	EscapedModel(p string) (start, end int)
}

// Traits are a dialect's fixed facts.
type Traits struct {
	// System is the OpenTelemetry gen_ai.provider.name of the API
	// ("openai", "anthropic", "gcp.gemini", "aws.bedrock", …).
	System string
	// SettlesUnused reports that the provider counts a call's max_tokens
	// against its output-tokens limit at the call's start and gives back
	// the unused part at its end.
	SettlesUnused bool
	// KeyHeader is the header the provider reads its key from ("" for a
	// dialect that signs instead).
	KeyHeader string
	// Signs reports that the provider's requests are signed with its own
	// credentials, by a Signer built apart (awssign.New for Bedrock,
	// googleauth.New for Vertex AI), rather than carry a plain key: a
	// provider of the dialect takes a region and a credentials file.
	Signs bool
	// StrictEnd reports that a stream ending before its terminal event
	// was cut, and that its reader must be told so (io.ErrUnexpectedEOF):
	// the dialect's clients would take the end of the bytes for a whole
	// answer (Gemini's, which have no terminal event to miss; the AWS
	// SDKs, which end a stream cut between two frames quietly).
	StrictEnd bool
}

// Signer signs or authorizes each attempt's request with a provider's
// own credentials, for the dialects that use no plain key (Traits.Signs):
// SigV4 for Bedrock (dialect/awssign), an OAuth2 bearer token for Vertex
// AI (dialect/googleauth). It is safe for concurrent use.
type Signer interface {
	// Sign signs r, whose body is body, just before it is sent. An error
	// (the credentials cannot be had) fails the attempt before anything
	// is sent; it is not retried.
	Sign(r *http.Request, body []byte) error
}

// SignerOptions are what a Signer is built from (awssign.New,
// googleauth.New): a provider's settings.
type SignerOptions struct {
	// Region is the provider's region (Bedrock: us-east-1); "" for the
	// credential chain's own.
	Region string
	// CredentialsFile is a file of credentials to read instead of the
	// standard chain's (a Google service-account JSON file); "" for the
	// chain.
	CredentialsFile string
	// Getenv reads the environment; nil for os.Getenv.
	Getenv func(string) string
	// Client makes the requests of credential endpoints (a token
	// endpoint); nil for http.DefaultClient.
	Client *http.Client
}
