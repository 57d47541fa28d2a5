// Package chat is the one chat model every API dialect converts to and
// from, for answering a client of one API with a provider of another: a
// Request (system prompt, messages of text, image, tool call and tool
// result parts, tools, tool choice, response format, sampling, limits),
// an Answer (text and tool call blocks, a stop reason, usage with cache
// tokens), and the Events every API's stream is read into and written
// from, one at a time. Each API is a Codec: OpenAI (Chat Completions),
// Anthropic (Messages), Gemini (generateContent), Bedrock (Converse) —
// two converters each, so a new API is one Codec, never one per pair.
//
// The conversion is strict: what the target API cannot express (a tool
// choice it lacks, an image by URL where only bytes go, another API's
// built-in tool, a temperature out of its range) is an error wrapping
// ErrUnsupported that names it, never dropped; what a decoder meets that
// the model does not carry is kept, as an Extra or an Other, for its own
// API to write back and for every other to refuse; a Request's Features
// say what a capability check must look for. The few things left out on
// purpose are said where they are: cache breakpoints for the APIs that
// cache on their own, OpenAI's lack of an is_error flag, a JSON schema's
// name where the API takes none, Gemini's thought signatures outside
// Gemini.
//
// Tool call ids are kept as the APIs give them. Gemini gives none: its
// decoders make up ids stable within one answer or request and tie each
// functionResponse to its functionCall by name and order (see Gemini).
//
// Usage is counted one way: Input leaves out the tokens read from or
// written to the cache, as Anthropic's input_tokens does, so the whole
// prompt is Input + CacheRead + CacheWrite. OpenAI's prompt_tokens and
// Gemini's promptTokenCount hold the cached tokens: their decoders take
// the cached count out, their encoders put it back in.
//
// Streams are framed by the caller (internal/sse, internal/awsevent): the
// package reads and writes each event's name and data (a Frame). A
// stream's decoder ends a stream whose bytes ended early with an
// EventError, and every encoder writes an EventError as its API's error
// event, so a cut or a failure never reaches a client as a clean end.
//
// JSON is read through the module's one JSON reader (internal/request's
// Walk) and written by appenders, with encoding/json for what is not
// plain; both ways are held to encoding/json's results by the tests.
// Besides that reader the package imports only the standard library.
package chat
