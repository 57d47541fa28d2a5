package chat

import (
	"cmp"
	"encoding/json"
	"slices"
)

// Request is a chat request in no API's shape: what a client asked of a
// model.
type Request struct {
	// Model is the model the body names; "" for the APIs that name it in
	// the path (Gemini, Bedrock), where the caller sets it.
	Model string
	// System is the system prompt: text parts, each possibly a cache
	// breakpoint; nil when there is none.
	System []Part
	// Messages are the conversation, oldest first.
	Messages []Message
	// Tools are the functions the model may call.
	Tools []Tool
	// ToolChoice says whether and which tool the model must call; the
	// zero value says nothing (the API's default, auto when there are
	// tools).
	ToolChoice ToolChoice
	// ParallelToolCalls, when not nil, says whether the model may call
	// several tools in one turn (OpenAI's parallel_tool_calls, Anthropic's
	// disable_parallel_tool_use negated).
	ParallelToolCalls *bool
	// Format is the shape the answer's text must have; nil for plain text.
	Format *Format
	// Stop are the stop sequences.
	Stop []string
	// Temperature and TopP are the sampling parameters; nil when not set.
	Temperature *float64
	TopP        *float64
	// TopK is the top-k sampling parameter (Anthropic, Gemini); nil when
	// not set.
	TopK *int64
	// MaxTokens is the most output tokens the answer may have; 0 when the
	// request names no limit (Anthropic requires one).
	MaxTokens int64
	// Seed asks for a reproducible answer (OpenAI, Gemini); nil when not
	// set.
	Seed *int64
	// PresencePenalty and FrequencyPenalty (OpenAI, Gemini); nil when not
	// set.
	PresencePenalty  *float64
	FrequencyPenalty *float64
	// User names the end user (OpenAI's user, Anthropic's
	// metadata.user_id); "" when not set.
	User string
	// Stream asks for a streamed answer. For the APIs that ask for a
	// stream by the path (Gemini, Bedrock) the decoders leave it false and
	// the encoders do not read it: the caller sets and reads it.
	Stream bool
	// IncludeUsage asks for the usage at the end of a stream (OpenAI's
	// stream_options.include_usage; the other APIs report it unasked).
	IncludeUsage bool
	// N is the number of answers asked for; 0 and 1 both mean one.
	N int
	// Extras are what the request carries that the model has no field
	// for: members and built-in tools only its own API knows. An encoder
	// of that API writes them back; any other refuses them.
	Extras []Extra
}

// Message is one turn of a conversation.
type Message struct {
	// Role is who speaks.
	Role Role
	// Parts are what the turn holds, in order.
	Parts []Part
	// Name is the participant's name OpenAI lets a message carry; "" when
	// none. Only OpenAI takes it.
	Name string
}

// Role is who speaks a message.
type Role string

// The roles. Tool results are parts of a user message, as in Anthropic's
// and Bedrock's APIs; a system message is one the conversation carries
// after its start (OpenAI allows it; the others refuse it): a leading one
// is the Request's System.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleSystem    Role = "system"
)

// a returns the role with its article, as errors write it.
func (r Role) a() string {
	if r == RoleAssistant {
		return "an assistant"
	}
	return "a " + string(r)
}

// PartType is what a Part holds.
type PartType uint8

// The kinds of part.
const (
	// PartText is text (Part.Text).
	PartText PartType = iota + 1
	// PartImage is an image (Part.Image).
	PartImage
	// PartToolCall is the model's call of a tool, in an assistant message
	// or an answer (Part.ToolCall).
	PartToolCall
	// PartToolResult is what a tool call gave, in a user message
	// (Part.ToolResult).
	PartToolResult
	// PartOther is a block only one API knows (Part.Other): Anthropic's
	// thinking, a document, an audio input.
	PartOther
)

// String returns the part type's name, as errors name it.
func (t PartType) String() string {
	switch t {
	case PartText:
		return "text"
	case PartImage:
		return "image"
	case PartToolCall:
		return "tool call"
	case PartToolResult:
		return "tool result"
	case PartOther:
		return "other"
	}
	return "unknown"
}

// a returns the part type's name with its article, as errors write it.
func (t PartType) a() string {
	switch t {
	case PartImage:
		return "an image"
	case PartOther:
		return "another API's"
	}
	return "a " + t.String()
}

// Part is one piece of a message or of an answer.
type Part struct {
	// Type says which of the fields below holds the part.
	Type       PartType
	Text       string
	Image      *Image
	ToolCall   *ToolCall
	ToolResult *ToolResult
	Other      *Other
	// Cache marks a cache breakpoint after the part (Anthropic's
	// cache_control, Bedrock's cachePoint); nil when none. The APIs that
	// cache on their own (OpenAI, Gemini) take no breakpoint, and their
	// encoders leave it out: it changes the cost of a call, not its
	// answer.
	Cache *Cache
	// Signature is an opaque token the model gave with the part (Gemini's
	// thoughtSignature), which only its own API reads back; the other
	// encoders leave it out.
	Signature string
}

// Text returns a text part.
func Text(s string) Part { return Part{Type: PartText, Text: s} }

// Image is an image, by URL or by its bytes.
type Image struct {
	// URL is where the image is, "" when Data holds it.
	URL string
	// MediaType is its type (image/png); "" when a URL does not say.
	MediaType string
	// Data is its bytes, base64-encoded as the APIs carry them.
	Data string
	// Detail is OpenAI's detail (low, high, auto); "" when not set.
	Detail string
}

// ToolCall is the model's call of a tool.
type ToolCall struct {
	// ID ties the call to its result. Gemini gives none: its decoders
	// make one up (see the package doc).
	ID string
	// Name is the tool's.
	Name string
	// Args are the arguments as the model wrote them: a JSON object,
	// normally (OpenAI carries them as a string, which a model may leave
	// invalid or empty).
	Args json.RawMessage
}

// ToolResult is what a tool call gave.
type ToolResult struct {
	// CallID is the ID of the call it answers.
	CallID string
	// Content is the result: text and image parts.
	Content []Part
	// IsError reports that the tool failed.
	IsError bool
}

// Other is a part only one API knows, kept as that API wrote it so that
// its own encoder writes it back; every other encoder refuses it.
type Other struct {
	// Dialect is the API (openai, anthropic, gemini, bedrock).
	Dialect string
	// Feature is what it asks (FeatureAudio for an audio input); "" for
	// FeatureOther.
	Feature Feature
	// Type names the part as errors name it: the block's type
	// (thinking), or its key (inlineData).
	Type string
	// Raw is the part, whole, as the API wrote it.
	Raw json.RawMessage
}

// Cache is a cache breakpoint.
type Cache struct {
	// TTL is how long the cache entry lives ("5m", "1h"); "" for the
	// API's default.
	TTL string
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Parameters is the JSON schema of the arguments; nil when none.
	Parameters json.RawMessage
	// Strict asks the API to hold the arguments to the schema exactly;
	// nil when not set.
	Strict *bool
	// Cache marks a cache breakpoint after the tool; nil when none.
	Cache *Cache
}

// ToolMode is what a ToolChoice asks.
type ToolMode string

// The tool choices.
const (
	// ToolAuto lets the model choose whether to call a tool.
	ToolAuto ToolMode = "auto"
	// ToolNone forbids calling one.
	ToolNone ToolMode = "none"
	// ToolRequired makes it call at least one (OpenAI's required,
	// Anthropic's and Bedrock's any, Gemini's ANY).
	ToolRequired ToolMode = "required"
	// ToolNamed makes it call the tool ToolChoice.Name.
	ToolNamed ToolMode = "tool"
)

// ToolChoice says whether and which tool the model must call.
type ToolChoice struct {
	// Mode is what is asked; "" when the request says nothing.
	Mode ToolMode
	// Name is the tool, for ToolNamed.
	Name string
}

// FormatType is the shape the answer's text must have.
type FormatType string

// The formats.
const (
	// FormatText is plain text, said explicitly.
	FormatText FormatType = "text"
	// FormatJSONObject is any JSON object (OpenAI's json_object, Gemini's
	// application/json without a schema).
	FormatJSONObject FormatType = "json_object"
	// FormatJSONSchema is JSON that follows Format.Schema.
	FormatJSONSchema FormatType = "json_schema"
)

// Format is the shape the answer's text must have.
type Format struct {
	Type FormatType
	// Name and Description name the schema (OpenAI requires a name; the
	// other APIs take none, or take it optionally).
	Name        string
	Description string
	// Schema is the JSON schema, for FormatJSONSchema.
	Schema json.RawMessage
	// Strict asks OpenAI to hold the answer to the schema exactly; nil
	// when not set. The other APIs always do.
	Strict *bool
}

// Feature is a thing a request may ask that not every API, or not every
// model, can serve. A capability check reads them (Request.Features).
type Feature string

// The features.
const (
	FeatureTools       Feature = "tools"
	FeatureImages      Feature = "images"
	FeatureJSONObject  Feature = "json_object"
	FeatureJSONSchema  Feature = "json_schema"
	FeatureChoices     Feature = "n"            // more than one answer
	FeatureLogprobs    Feature = "logprobs"     // log probabilities of the tokens
	FeatureAudio       Feature = "audio"        // audio in or out
	FeatureBuiltinTool Feature = "builtin_tool" // a tool the provider runs (web search, code execution)
	FeatureThinking    Feature = "thinking"     // the model's visible reasoning, or its budget
	FeatureOther       Feature = "other"        // a member only its own API knows
)

// Extra is a member or a tool of a request that only one API knows, kept
// as it was written.
type Extra struct {
	// Feature is what it asks; FeatureOther when nothing more is known.
	Feature Feature
	// Dialect is the API whose it is.
	Dialect string
	// In is the member a nested one is in (output_config for
	// output_config.effort); "" for a member of the request itself.
	In string
	// Name is the member's name (logprobs, effort), or a built-in tool's
	// type (web_search_preview).
	Name string
	// Value is the member's value, or the whole tool object.
	Value json.RawMessage
	// Advisory reports a member that does not change the answer: the end
	// user's metadata, whether to store the call, a service tier. An
	// encoder of another API refuses it as it refuses any extra; a caller
	// may drop the advisory ones first, by policy.
	Advisory bool
}

// Features returns what the request asks that not every API or model
// can serve, each once, in the order of the constants.
func (r *Request) Features() []Feature {
	var fs []Feature
	add := func(f Feature) {
		if !slices.Contains(fs, f) {
			fs = append(fs, f)
		}
	}
	if len(r.Tools) > 0 || r.hasPart(PartToolCall) || r.hasPart(PartToolResult) {
		add(FeatureTools)
	}
	if r.hasPart(PartImage) {
		add(FeatureImages)
	}
	if r.Format != nil {
		switch r.Format.Type {
		case FormatJSONObject:
			add(FeatureJSONObject)
		case FormatJSONSchema:
			add(FeatureJSONSchema)
		}
	}
	if r.N > 1 {
		add(FeatureChoices)
	}
	for _, e := range r.Extras {
		add(e.Feature)
	}
	r.eachPart(func(p Part) {
		if p.Type == PartOther && p.Other != nil {
			add(cmp.Or(p.Other.Feature, FeatureOther))
		}
	})
	order := []Feature{FeatureTools, FeatureImages, FeatureJSONObject, FeatureJSONSchema, FeatureChoices,
		FeatureLogprobs, FeatureAudio, FeatureBuiltinTool, FeatureThinking, FeatureOther}
	slices.SortFunc(fs, func(a, b Feature) int { return slices.Index(order, a) - slices.Index(order, b) })
	return fs
}

// hasPart reports whether any message, or any tool result in one, holds
// a part of type t.
func (r *Request) hasPart(t PartType) bool {
	found := false
	r.eachPart(func(p Part) { found = found || p.Type == t })
	return found
}

// eachPart calls fn with every part of every message, and of every tool
// result in one.
func (r *Request) eachPart(fn func(Part)) {
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			fn(p)
			if p.Type == PartToolResult && p.ToolResult != nil {
				for _, c := range p.ToolResult.Content {
					fn(c)
				}
			}
		}
	}
}

// Answer is a model's whole answer in no API's shape.
type Answer struct {
	// ID is the answer's id as its API gave it; "" when it gave none
	// (Bedrock). The encoders write what they are given.
	ID string
	// Model is the model that answered, as its API named it.
	Model string
	// Created is when, in Unix seconds (OpenAI's created); 0 when unknown.
	Created int64
	// Content is the answer's blocks: text and tool calls, in order.
	Content []Part
	// Stop is why the answer ended.
	Stop StopReason
	// StopSequence is the stop sequence that ended it, when Stop is
	// StopSequence and the API says which.
	StopSequence string
	// Usage is what the answer cost.
	Usage Usage
}

// StopReason is why an answer ended.
type StopReason string

// The stop reasons.
const (
	StopEndTurn       StopReason = "end_turn"       // the model finished
	StopMaxTokens     StopReason = "max_tokens"     // the output limit cut it
	StopToolUse       StopReason = "tool_use"       // it called tools and waits for their results
	StopSequence      StopReason = "stop_sequence"  // a stop sequence ended it
	StopContentFilter StopReason = "content_filter" // a filter or a refusal ended it
	StopError         StopReason = "error"          // the model failed (Gemini's MALFORMED_FUNCTION_CALL, OTHER)
)

// Usage is the tokens an answer cost. The APIs count the prompt
// differently: Anthropic's input_tokens and Bedrock's inputTokens leave
// out the cached tokens, OpenAI's prompt_tokens and Gemini's
// promptTokenCount hold them. Here Input leaves them out, as Anthropic's
// does: the whole prompt is Input + CacheRead + CacheWrite.
type Usage struct {
	// Input is the prompt tokens neither read from the cache nor written
	// to it.
	Input int64
	// Output is the answer's tokens (thinking included).
	Output int64
	// CacheRead is the prompt tokens read from the cache.
	CacheRead int64
	// CacheWrite is the prompt tokens written to the cache.
	CacheWrite int64
}

// Prompt returns the whole prompt's tokens: Input, CacheRead and
// CacheWrite.
func (u Usage) Prompt() int64 { return u.Input + u.CacheRead + u.CacheWrite }

// Total returns every token: the prompt's and Output.
func (u Usage) Total() int64 { return u.Prompt() + u.Output }
