package spend

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strconv"

	"github.com/sluice-llm/sluice/internal/request"
	"github.com/sluice-llm/sluice/internal/sse"
)

// Usage is the token usage a provider reported for one answer.
//
// The providers count cached prompt tokens differently. Anthropic's
// input_tokens excludes them: they are reported apart, as
// cache_read_input_tokens and cache_creation_input_tokens. OpenAI's
// prompt_tokens (Responses API: input_tokens) includes them, and
// prompt_tokens_details.cached_tokens (input_tokens_details.cached_tokens)
// tells how many were read from the cache. Usage keeps each provider's
// Input as reported, copies OpenAI's cached count to CacheRead as well, and
// sets CacheReadInInput so that Cost prices those tokens once.
type Usage struct {
	// Input is the prompt tokens: prompt_tokens or input_tokens. For
	// OpenAI it includes the CacheRead tokens; for Anthropic it does not.
	Input int64
	// Output is the completion tokens: completion_tokens or output_tokens.
	Output int64
	// CacheRead is the prompt tokens read from the provider's cache:
	// Anthropic cache_read_input_tokens, or OpenAI cached_tokens (which
	// Input counts too; see CacheReadInInput).
	CacheRead int64
	// CacheWrite is the prompt tokens written to the cache: Anthropic
	// cache_creation_input_tokens. OpenAI reports none.
	CacheWrite int64
	// CacheReadInInput reports that Input already counts the CacheRead
	// tokens, as OpenAI reports them. It is set whenever the usage carries
	// prompt_tokens_details or input_tokens_details.
	CacheReadInInput bool
}

// IsZero reports whether no usage was reported: every count is zero.
func (u Usage) IsZero() bool {
	return u.Input == 0 && u.Output == 0 && u.CacheRead == 0 && u.CacheWrite == 0
}

// Price is what a model costs, in USD per million tokens.
type Price struct {
	// Input and Output price prompt and completion tokens.
	Input, Output float64
	// CacheRead and CacheWrite price the tokens read from and written to
	// the provider's prompt cache. If zero, Input is used.
	CacheRead, CacheWrite float64
}

// Cost returns the USD cost of u at the prices p. Cache reads and writes
// are priced as input unless their own prices are non-zero. When
// u.CacheReadInInput is set, the cached tokens are taken out of Input first,
// so that each token is priced once.
func (p Price) Cost(u Usage) float64 {
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	in := u.Input
	if u.CacheReadInInput {
		in -= min(u.CacheRead, in)
	}
	return (float64(in)*p.Input + float64(u.Output)*p.Output +
		float64(u.CacheRead)*read + float64(u.CacheWrite)*write) / 1e6
}

// Tokens is how many tokens the answer counts against a provider's
// tokens-per-minute limit: its input and output, and the tokens written to
// the cache; tokens read from the cache only as far as Input already counts
// them (OpenAI's way), since Anthropic leaves them out of its input limit.
func (u Usage) Tokens() int64 { return u.Input + u.Output + u.CacheWrite }

// UsageFromJSON reads the usage of a whole, non-streamed answer: the
// top-level "usage" object of an OpenAI chat completion (prompt_tokens,
// completion_tokens, prompt_tokens_details.cached_tokens), an OpenAI
// Responses API response (input_tokens, output_tokens,
// input_tokens_details.cached_tokens) or an Anthropic message (input_tokens,
// output_tokens, cache_read_input_tokens, cache_creation_input_tokens), or
// else the top-level "usageMetadata" of a Gemini answer (promptTokenCount,
// candidatesTokenCount, thoughtsTokenCount as output,
// cachedContentTokenCount as a cache read counted in Input). ok is false
// when body is not JSON or has no usage object, as in an error body.
// Counts that are negative read as zero.
func UsageFromJSON(body []byte) (u Usage, ok bool) {
	if !hasUsageObject(body) {
		return geminiUsage(body)
	}
	// One pass validates the body and reads its top-level members; only
	// the usage members are decoded, into one object as encoding/json
	// decodes a repeated key: null drops what came before.
	var w usageWire
	seen := false
	valid := walkValid(body, func(k, v []byte) {
		if request.KeyIs(k, "usage") {
			// As encoding/json does with a pointer: null sets it to nil;
			// any other value allocates it, and only an object fills it.
			switch v[0] {
			case 'n':
				w, seen = usageWire{}, false
			case '{':
				seen = true
				w.decode(v)
			default:
				seen = true
			}
		}
	})
	if !valid || !seen {
		return Usage{}, false
	}
	return w.usage(), true
}

// decode reads the usage object v, valid JSON, into w as encoding/json
// decodes it into w's tagged fields, without its reflection: keys matched
// case-folded, a later member over an earlier one, numbers of any form; a
// member of another type leaves its field as it was (a type error), but
// allocates a pointer field that was nil, and null sets a pointer field to
// nil.
func (w *usageWire) decode(v []byte) {
	request.Walk(v, func(k, v []byte) bool {
		switch {
		case request.KeyIs(k, "prompt_tokens"):
			decodeNumber(v, &w.PromptTokens)
		case request.KeyIs(k, "completion_tokens"):
			decodeNumber(v, &w.CompletionTokens)
		case request.KeyIs(k, "input_tokens"):
			decodeNumber(v, &w.InputTokens)
		case request.KeyIs(k, "cache_read_input_tokens"):
			decodeNumber(v, &w.CacheRead)
		case request.KeyIs(k, "cache_creation_input_tokens"):
			decodeNumber(v, &w.CacheWrite)
		case request.KeyIs(k, "output_tokens"):
			if v[0] == 'n' {
				w.OutputTokens = nil
				break
			}
			if w.OutputTokens == nil {
				w.OutputTokens = new(float64)
			}
			decodeNumber(v, w.OutputTokens)
		case request.KeyIs(k, "prompt_tokens_details"):
			decodeCached(v, &w.PromptDetails)
		case request.KeyIs(k, "input_tokens_details"):
			decodeCached(v, &w.InputDetails)
		}
		return true
	})
}

// decodeCached reads a prompt_tokens_details or input_tokens_details
// value into *c, as decode does.
func decodeCached(v []byte, c **cachedCount) {
	if v[0] == 'n' {
		*c = nil
		return
	}
	if *c == nil {
		*c = new(cachedCount)
	}
	if v[0] == '{' {
		request.Walk(v, func(k, v []byte) bool {
			if request.KeyIs(k, "cached_tokens") {
				decodeNumber(v, &(*c).CachedTokens)
			}
			return true
		})
	}
}

// decodeNumber sets *f to the JSON number v; any other value, or a number
// out of float64's range, leaves *f as it was.
func decodeNumber(v []byte, f *float64) {
	if !isNumber(v) {
		return
	}
	if n, err := strconv.ParseFloat(string(v), 64); err == nil {
		*f = n
	}
}

func isNumber(v []byte) bool { return v[0] == '-' || v[0] >= '0' && v[0] <= '9' }

// maxUsageEvent bounds the bytes a UsageMeter buffers for one event. The
// Responses API's response.completed event repeats the whole answer, so the
// bound is well above sse.DefaultMaxEventSize; a larger event is skipped,
// and its usage with it.
const maxUsageEvent = 8 << 20

// UsageMeter reads the usage of a streamed answer (text/event-stream) from
// its bytes, fed to Write as they pass. It understands:
//
//   - OpenAI chat completions: the last chunk whose "usage" is not null
//     (sent only when the request set stream_options.include_usage);
//   - the OpenAI Responses API: the "usage" of the response in
//     response.completed (or response.incomplete, response.failed);
//   - Anthropic messages: message_start's message.usage, then
//     message_delta's usage, whose output_tokens is cumulative and replaces
//     the earlier count, and whose other counts replace earlier ones when
//     non-zero. A stream cut before message_delta keeps the output count of
//     message_start;
//   - Gemini (streamGenerateContent?alt=sse): the "usageMetadata" of the
//     last chunk that has one, each chunk's being cumulative.
//
// Other events, comments, pings and "[DONE]" are skipped after a cheap look
// for a "usage" object, without decoding them. The zero value is ready to
// use. A UsageMeter is not safe for concurrent use.
type UsageMeter struct {
	p  sse.Parser
	u  Usage
	ok bool
}

// Write feeds p, the next bytes of the event stream. It never fails and
// keeps no more than the current event (at most 8 MiB; a larger event is
// skipped).
func (m *UsageMeter) Write(p []byte) (int, error) {
	if m.p.MaxEventSize == 0 {
		m.p.MaxEventSize = maxUsageEvent
	}
	m.p.Feed(p, m.event)
	return len(p), nil
}

// Usage returns the usage seen so far, and whether any was seen.
func (m *UsageMeter) Usage() (Usage, bool) { return m.u, m.ok }

// Events returns the number of events seen so far. A streamed answer
// carries about one output token per event, which is the estimate of its
// output when it reports no usage.
func (m *UsageMeter) Events() int { return m.p.Events() }

// event takes the usage out of one event, if it carries any.
func (m *UsageMeter) event(e sse.Event) bool {
	if !hasUsageObject(e.Data) {
		if u, ok := geminiUsage(e.Data); ok { // cumulative: the last one wins
			m.u, m.ok = u, true
		}
		return true
	}
	var ev usageEvent
	if isSyntaxError(json.Unmarshal(e.Data, &ev)) {
		return true
	}
	typ := ev.Type
	if typ == "" {
		typ = e.Type
	}
	switch {
	case ev.Usage != nil && typ == "message_delta":
		m.merge(ev.Usage)
	case ev.Usage != nil:
		m.u, m.ok = ev.Usage.usage(), true
	case ev.Message != nil && ev.Message.Usage != nil:
		m.u, m.ok = ev.Message.Usage.usage(), true
	case ev.Response != nil && ev.Response.Usage != nil:
		m.u, m.ok = ev.Response.Usage.usage(), true
	}
	return true
}

// merge applies the usage of an Anthropic message_delta: output_tokens
// when present, the other counts when non-zero.
func (m *UsageMeter) merge(w *usageWire) {
	d := w.usage()
	if w.OutputTokens != nil || w.CompletionTokens != 0 {
		m.u.Output = d.Output
	}
	if d.Input != 0 {
		m.u.Input = d.Input
	}
	if d.CacheRead != 0 {
		m.u.CacheRead = d.CacheRead
		m.u.CacheReadInInput = d.CacheReadInInput
	}
	if d.CacheWrite != 0 {
		m.u.CacheWrite = d.CacheWrite
	}
	m.ok = true
}

// usageEvent is the part of a stream event that may hold a usage object.
type usageEvent struct {
	Type     string       `json:"type"`
	Usage    *usageWire   `json:"usage"`    // OpenAI chat chunk, Anthropic message_delta
	Message  *usageHolder `json:"message"`  // Anthropic message_start
	Response *usageHolder `json:"response"` // Responses API response.*
}

// usageHolder is a JSON object with a "usage" member.
type usageHolder struct {
	Usage *usageWire `json:"usage"`
}

// usageWire is a usage object as either provider writes it. Counts are
// decoded as numbers of any form (12, 12.0, 1.2e1) and clamped by
// tokenCount.
type usageWire struct {
	PromptTokens     float64      `json:"prompt_tokens"`
	CompletionTokens float64      `json:"completion_tokens"`
	InputTokens      float64      `json:"input_tokens"`
	OutputTokens     *float64     `json:"output_tokens"`
	CacheRead        float64      `json:"cache_read_input_tokens"`
	CacheWrite       float64      `json:"cache_creation_input_tokens"`
	PromptDetails    *cachedCount `json:"prompt_tokens_details"`
	InputDetails     *cachedCount `json:"input_tokens_details"`
}

// cachedCount is OpenAI's prompt_tokens_details / input_tokens_details.
type cachedCount struct {
	CachedTokens float64 `json:"cached_tokens"`
}

// usage converts w, preferring OpenAI's names where both are set.
func (w *usageWire) usage() Usage {
	u := Usage{
		Input:      tokenCount(w.PromptTokens),
		Output:     tokenCount(w.CompletionTokens),
		CacheRead:  tokenCount(w.CacheRead),
		CacheWrite: tokenCount(w.CacheWrite),
	}
	if u.Input == 0 {
		u.Input = tokenCount(w.InputTokens)
	}
	if u.Output == 0 && w.OutputTokens != nil {
		u.Output = tokenCount(*w.OutputTokens)
	}
	details := w.PromptDetails
	if details == nil {
		details = w.InputDetails
	}
	if details != nil {
		u.CacheRead = tokenCount(details.CachedTokens)
		u.CacheReadInInput = true
	}
	return u
}

// tokenCount returns f as a count: truncated, negative and NaN read as 0,
// and too large read as math.MaxInt64.
func tokenCount(f float64) int64 {
	switch {
	case !(f > 0):
		return 0
	case f >= math.MaxInt64:
		return math.MaxInt64
	}
	return int64(f)
}

// isSyntaxError reports whether err says the JSON was malformed, in which
// case nothing decoded from it is kept. Other errors (a member of the wrong
// type) leave the rest decoded.
func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se)
}

// usageKey is searched for without its opening quote: a quote is the
// commonest byte of JSON and a "u" a rare one, which keeps bytes.Index on
// its fast path.
var usageKey = []byte(`usage"`)

// hasUsageObject reports whether data may hold a usage object: somewhere
// in it, "usage" is followed by a colon and an opening brace. It is the
// cheap test that spares decoding the events without one, such as OpenAI
// chunks with "usage":null.
func hasUsageObject(data []byte) bool {
	for {
		i := bytes.Index(data, usageKey)
		if i < 0 {
			return false
		}
		quoted := i > 0 && data[i-1] == '"'
		data = data[i+len(usageKey):]
		if quoted && objectFollows(data) {
			return true
		}
	}
}

// objectFollows reports whether b starts with a colon and then an opening
// brace, JSON white space allowed around the colon.
func objectFollows(b []byte) bool {
	want := byte(':')
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
		case want:
			if want == '{' {
				return true
			}
			want = '{'
		default:
			return false
		}
	}
	return false
}
