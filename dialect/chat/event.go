package chat

import "encoding/json"

// EventType is what a stream Event says.
type EventType uint8

// The events every API's stream is read into and written from. A stream
// that ends well is: EventStart; the blocks' events; EventDelta, once;
// EventStop. Blocks are numbered from 0 in the order they begin, text and
// tool calls alike (Anthropic's content block index); a block's events
// may interleave with another's where the source API interleaves them
// (OpenAI's), and each encoder orders them as its API must.
const (
	// EventStart begins the answer: ID, Model, Created, and Usage as far
	// as it is known at the start (Anthropic's input tokens), or nil.
	EventStart EventType = iota + 1
	// EventText is a piece of text of block Index: Text.
	EventText
	// EventToolStart begins block Index, a tool call: ID and Name.
	EventToolStart
	// EventToolArgs is a piece of the arguments of tool call Index: Args,
	// partial JSON to be appended to the earlier pieces.
	EventToolArgs
	// EventBlockStop ends block Index.
	EventBlockStop
	// EventDelta ends the answer's content: Stop, StopSequence, and the
	// whole answer's Usage (nil when the stream reported none).
	EventDelta
	// EventStop ends the stream; nothing follows.
	EventStop
	// EventError is an error the stream reported instead of its end: Err.
	// Nothing follows it.
	EventError
)

// String returns the event type's name.
func (t EventType) String() string {
	switch t {
	case EventStart:
		return "start"
	case EventText:
		return "text"
	case EventToolStart:
		return "tool_start"
	case EventToolArgs:
		return "tool_args"
	case EventBlockStop:
		return "block_stop"
	case EventDelta:
		return "delta"
	case EventStop:
		return "stop"
	case EventError:
		return "error"
	}
	return "unknown"
}

// Event is one event of a streamed answer. Type says which fields it
// uses.
type Event struct {
	Type EventType
	// Index is the block of EventText, EventToolStart, EventToolArgs and
	// EventBlockStop.
	Index int
	// ID is the answer's id (EventStart) or the tool call's
	// (EventToolStart).
	ID string
	// Model and Created are the answer's (EventStart).
	Model   string
	Created int64
	// Name is the tool's (EventToolStart).
	Name string
	// Text is a piece of text (EventText).
	Text string
	// Args is a piece of a tool call's arguments (EventToolArgs).
	Args string
	// Stop and StopSequence are why the answer ended (EventDelta).
	Stop         StopReason
	StopSequence string
	// Usage is the usage known (EventStart, EventDelta); nil when none.
	Usage *Usage
	// Err is the stream's error (EventError).
	Err *Error
}

// Error is an error a provider reported, in a stream or as an answer.
type Error struct {
	// Status is the HTTP status it stands for: 529 overloaded, 503
	// unavailable, 429 a rate limit or a used-up quota, 400 a bad
	// request, 500 a server error. The encoders choose their API's type by
	// it.
	Status int
	// Type is the provider's own name for it (overloaded_error,
	// RESOURCE_EXHAUSTED, throttlingException); "" when none.
	Type string
	// Message is what it says.
	Message string
}

// Frame is one event of a stream as an API frames it: a server-sent
// event, or the payload of an AWS event-stream frame (Bedrock's). The
// package reads and writes frames, not their bytes: a caller cuts
// events out of the stream (internal/sse, internal/awsevent) and writes
// them back.
type Frame struct {
	// Event is the SSE event's name ("" when it has none), or the AWS
	// frame's :event-type, or for an error its :exception-type.
	Event string
	// Data is the SSE event's data, or the AWS frame's payload.
	Data []byte
	// Exception reports an AWS exception frame (Bedrock's errors); false
	// for every SSE event.
	Exception bool
}

// StreamDecoder reads one API's stream into Events, frame by frame. It
// keeps what an API spreads over several frames (OpenAI's usage after
// its finish_reason, Bedrock's after messageStop). It is not safe for
// concurrent use.
type StreamDecoder interface {
	// Decode appends to dst the events f completes, and returns it. A
	// frame that does not decode is an error wrapping ErrMalformed; one
	// that holds what the model does not carry, an error wrapping
	// ErrUnsupported; a provider's error event is no error but an
	// EventError.
	Decode(dst []Event, f Frame) ([]Event, error)
	// End appends the events that end a stream whose bytes ended: none
	// when it ended well (or with an error event), else an EventError
	// saying the stream was cut, so that a cut is never taken for an end.
	End(dst []Event) []Event
}

// StreamEncoder writes Events as one API's stream. It keeps what the API
// needs across events (which blocks are open, a tool call's arguments
// for an API that sends them whole). It is not safe for concurrent use.
type StreamEncoder interface {
	// Encode appends to dst the frames ev makes, possibly none, and
	// returns it. An event the API cannot express is an error wrapping
	// ErrUnsupported; after an EventError or EventStop it writes nothing
	// more.
	Encode(dst []Frame, ev Event) ([]Frame, error)
}

// Codec is one API's converters to and from the chat model: requests,
// whole answers, and streams. A Codec is a stateless value, safe for
// concurrent use; its stream decoders and encoders are not.
type Codec interface {
	// Name is the API's name as config kinds write it (openai, anthropic,
	// gemini, bedrock).
	Name() string
	// DecodeRequest reads a request body.
	DecodeRequest(body []byte) (*Request, error)
	// EncodeRequest writes r as a request body, or says what in r the API
	// cannot take (an error wrapping ErrUnsupported).
	EncodeRequest(r *Request) ([]byte, error)
	// DecodeAnswer reads a whole answer's body (an error body is no
	// answer: the caller reads it as the API's error).
	DecodeAnswer(body []byte) (*Answer, error)
	// EncodeAnswer writes a as an answer body.
	EncodeAnswer(a *Answer) ([]byte, error)
	// DecodeError reads an error body or an error event's data as the API
	// writes it; status is the answer's HTTP status (0 for an event).
	DecodeError(status int, body []byte) *Error
	// EncodeError writes e as the API's error body.
	EncodeError(e *Error) []byte
	// NewStreamDecoder returns a decoder of one stream.
	NewStreamDecoder() StreamDecoder
	// NewStreamEncoder returns an encoder of one stream answering r, the
	// request as the client sent it (its IncludeUsage); r may be nil.
	NewStreamEncoder(r *Request) StreamEncoder
}

// rawString returns s as a JSON string.
func rawString(s string) json.RawMessage {
	b, _ := json.Marshal(s) // a string always marshals
	return b
}
