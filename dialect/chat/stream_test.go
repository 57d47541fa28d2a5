package chat

import (
	"cmp"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A stream scenario: the events in the model, each API's stream of them,
// and what each API's decoder reads back from its stream.
type streamCase struct {
	name    string
	events  []Event
	wire    map[string][]Frame
	decoded map[string][]Event // where not events with the API's Start (startAs)
}

// Frames as each API writes them.

func sse(event, data string) Frame { return Frame{Event: event, Data: []byte(data)} }

// oaChunk is an OpenAI chunk of one choice; finish is JSON (null, "stop").
func oaChunk(delta, finish string) Frame {
	return sse("", `{"id":"a1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":`+
		delta+`,"logprobs":null,"finish_reason":`+finish+`}]}`)
}

func oaUsageChunk(usage string) Frame {
	return sse("", `{"id":"a1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[],"usage":`+usage+`}`)
}

var (
	oaRole = oaChunk(`{"role":"assistant","content":""}`, "null")
	oaDone = sse("", "[DONE]")
)

func oaText(s string) Frame { return oaChunk(`{"content":`+string(rawString(s))+`}`, "null") }

func oaToolStart(k int, id, name string) Frame {
	return oaChunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, k, id, name), "null")
}

func oaToolArgs(k int, args string) Frame {
	return oaChunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, k, rawString(args)), "null")
}

func anStart(usage string) Frame {
	return sse("message_start", `{"type":"message_start","message":{"id":"a1","type":"message","role":"assistant","model":"m",
		"content":[],"stop_reason":null,"stop_sequence":null,"usage":`+usage+`}}`)
}

func anTextStart(i int) Frame {
	return sse("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":{"type":"text","text":""}}`, i))
}

func anToolStart(i int, id, name string) Frame {
	return sse("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,
		"content_block":{"type":"tool_use","id":%q,"name":%q,"input":{}}}`, i, id, name))
}

func anText(i int, s string) Frame {
	return sse("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, i, rawString(s)))
}

func anArgs(i int, s string) Frame {
	return sse("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,
		"delta":{"type":"input_json_delta","partial_json":%s}}`, i, rawString(s)))
}

func anStop(i int) Frame {
	return sse("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, i))
}

func anDelta(stop, usage string) Frame {
	return sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":`+usage+`}`)
}

var anEnd = sse("message_stop", `{"type":"message_stop"}`)

// geChunk is a Gemini chunk; finish and usage are left out when "".
func geChunk(parts, finish, usage string) Frame {
	s := `{"candidates":[{"content":{"parts":` + parts + `,"role":"model"},`
	if finish != "" {
		s += `"finishReason":"` + finish + `",`
	}
	s += `"index":0}],`
	if usage != "" {
		s += `"usageMetadata":` + usage + `,`
	}
	return sse("", s+`"modelVersion":"m","responseId":"a1"}`)
}

func geText(s string) Frame { return geChunk(`[{"text":`+string(rawString(s))+`}]`, "", "") }

func geCall(name, args string) Frame {
	return geChunk(`[{"functionCall":{"name":"`+name+`","args":`+args+`}}]`, "", "")
}

func br(name, data string) Frame { return sse(name, data) }

var brStart = br("messageStart", `{"role":"assistant"}`)

func brText(i int, s string) Frame {
	return br("contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":%d,"delta":{"text":%s}}`, i, rawString(s)))
}

func brToolStart(i int, id, name string) Frame {
	return br("contentBlockStart", fmt.Sprintf(`{"contentBlockIndex":%d,"start":{"toolUse":{"toolUseId":%q,"name":%q}}}`, i, id, name))
}

func brArgs(i int, s string) Frame {
	return br("contentBlockDelta", fmt.Sprintf(`{"contentBlockIndex":%d,"delta":{"toolUse":{"input":%s}}}`, i, rawString(s)))
}

func brStop(i int) Frame { return br("contentBlockStop", fmt.Sprintf(`{"contentBlockIndex":%d}`, i)) }

func brEnd(stop, usage string) []Frame {
	return []Frame{br("messageStop", `{"stopReason":"`+stop+`"}`), br("metadata", `{"usage":`+usage+`,"metrics":{"latencyMs":0}}`)}
}

// Events in the model.

func evStart(u *Usage) Event {
	return Event{Type: EventStart, ID: "a1", Model: "m", Created: 1700000000, Usage: u}
}
func evText(i int, s string) Event { return Event{Type: EventText, Index: i, Text: s} }
func evTool(i int, id, name string) Event {
	return Event{Type: EventToolStart, Index: i, ID: id, Name: name}
}
func evArgs(i int, s string) Event           { return Event{Type: EventToolArgs, Index: i, Args: s} }
func evBlockStop(i int) Event                { return Event{Type: EventBlockStop, Index: i} }
func evDelta(stop StopReason, u Usage) Event { return Event{Type: EventDelta, Stop: stop, Usage: &u} }

var evStop = Event{Type: EventStop}

// startAs is a stream's Start as name's decoder reads it: OpenAI alone
// says when, Anthropic alone gives the usage at the start, Bedrock names
// neither the answer nor the model.
func startAs(name string, ev Event) Event {
	if name != "openai" {
		ev.Created = 0
	}
	if name != "anthropic" {
		ev.Usage = nil
	}
	if name == "bedrock" {
		ev.ID, ev.Model = "", ""
	}
	return ev
}

var streamCases = []streamCase{
	{
		name: "text",
		events: []Event{evStart(&Usage{Input: 10}), evText(0, "Hel"), evText(0, "lo."), evBlockStop(0),
			evDelta(StopEndTurn, Usage{Input: 10, Output: 3}), evStop},
		wire: map[string][]Frame{
			"openai": {oaRole, oaText("Hel"), oaText("lo."), oaChunk(`{}`, `"stop"`), oaUsageChunk(oaUsage), oaDone},
			"anthropic": {anStart(`{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`),
				anTextStart(0), anText(0, "Hel"), anText(0, "lo."), anStop(0), anDelta("end_turn", anUsage), anEnd},
			"gemini": {geText("Hel"), geText("lo."), geChunk(`[{"text":""}]`, "STOP", geUsage)},
			"bedrock": append([]Frame{brStart, brText(0, "Hel"), brText(0, "lo."), brStop(0)},
				brEnd("end_turn", brUsage)...),
		},
	},
	{
		name: "two parallel tool calls, arguments in pieces",
		events: []Event{evStart(&Usage{Input: 20}), evText(0, "Checking."), evBlockStop(0),
			evTool(1, "call_a1_0", "get_weather"), evArgs(1, `{"city":`), evArgs(1, `"Paris"}`), evBlockStop(1),
			evTool(2, "call_a1_1", "get_time"), evArgs(2, `{"tz":"Eu`), evArgs(2, `rope/Rome"}`), evBlockStop(2),
			evDelta(StopToolUse, Usage{Input: 20, Output: 15}), evStop},
		wire: map[string][]Frame{
			"openai": {oaRole, oaText("Checking."),
				oaToolStart(0, "call_a1_0", "get_weather"), oaToolArgs(0, `{"city":`), oaToolArgs(0, `"Paris"}`),
				oaToolStart(1, "call_a1_1", "get_time"), oaToolArgs(1, `{"tz":"Eu`), oaToolArgs(1, `rope/Rome"}`),
				oaChunk(`{}`, `"tool_calls"`),
				oaUsageChunk(`{"prompt_tokens":20,"completion_tokens":15,"total_tokens":35,"prompt_tokens_details":{"cached_tokens":0}}`), oaDone},
			"anthropic": {anStart(`{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`),
				anTextStart(0), anText(0, "Checking."), anStop(0),
				anToolStart(1, "call_a1_0", "get_weather"), anArgs(1, `{"city":`), anArgs(1, `"Paris"}`), anStop(1),
				anToolStart(2, "call_a1_1", "get_time"), anArgs(2, `{"tz":"Eu`), anArgs(2, `rope/Rome"}`), anStop(2),
				anDelta("tool_use", `{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":15}`), anEnd},
			"gemini": {geText("Checking."), geCall("get_weather", `{"city":"Paris"}`), geCall("get_time", `{"tz":"Europe/Rome"}`),
				geChunk(`[{"text":""}]`, "STOP", `{"promptTokenCount":20,"candidatesTokenCount":15,"totalTokenCount":35}`)},
			"bedrock": append([]Frame{brStart, brText(0, "Checking."), brStop(0),
				brToolStart(1, "call_a1_0", "get_weather"), brArgs(1, `{"city":`), brArgs(1, `"Paris"}`), brStop(1),
				brToolStart(2, "call_a1_1", "get_time"), brArgs(2, `{"tz":"Eu`), brArgs(2, `rope/Rome"}`), brStop(2)},
				brEnd("tool_use", `{"inputTokens":20,"outputTokens":15,"totalTokens":35}`)...),
		},
		decoded: map[string][]Event{
			// OpenAI ends its blocks only with the finish_reason.
			"openai": {startAs("openai", evStart(nil)), evText(0, "Checking."),
				evTool(1, "call_a1_0", "get_weather"), evArgs(1, `{"city":`), evArgs(1, `"Paris"}`),
				evTool(2, "call_a1_1", "get_time"), evArgs(2, `{"tz":"Eu`), evArgs(2, `rope/Rome"}`),
				evBlockStop(0), evBlockStop(1), evBlockStop(2), evDelta(StopToolUse, Usage{Input: 20, Output: 15}), evStop},
			// Gemini sends each call whole, and no ids: they are made up from
			// its responseId.
			"gemini": {startAs("gemini", evStart(nil)), evText(0, "Checking."), evBlockStop(0),
				evTool(1, "call_a1_0", "get_weather"), evArgs(1, `{"city":"Paris"}`), evBlockStop(1),
				evTool(2, "call_a1_1", "get_time"), evArgs(2, `{"tz":"Europe/Rome"}`), evBlockStop(2),
				evDelta(StopToolUse, Usage{Input: 20, Output: 15}), evStop},
		},
	},
	{
		name: "an error event mid-stream",
		events: []Event{evStart(&Usage{Input: 10}), evText(0, "Hel"),
			{Type: EventError, Err: &Error{Status: 529, Type: "overloaded_error", Message: "Overloaded"}}},
		wire: map[string][]Frame{
			"openai": {oaRole, oaText("Hel"), sse("", `{"error":{"message":"Overloaded","type":"server_error","param":null,"code":"overloaded"}}`)},
			"anthropic": {anStart(`{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`),
				anTextStart(0), anText(0, "Hel"), sse("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
			"gemini":  {geText("Hel"), sse("", `{"error":{"code":503,"message":"Overloaded","status":"UNAVAILABLE"}}`)},
			"bedrock": {brStart, brText(0, "Hel"), {Event: "serviceUnavailableException", Data: []byte(`{"message":"Overloaded"}`), Exception: true}},
		},
		decoded: map[string][]Event{
			"openai": {startAs("openai", evStart(nil)), evText(0, "Hel"),
				{Type: EventError, Err: &Error{Status: 529, Type: "overloaded", Message: "Overloaded"}}},
			"gemini": {startAs("gemini", evStart(nil)), evText(0, "Hel"),
				{Type: EventError, Err: &Error{Status: 503, Type: "UNAVAILABLE", Message: "Overloaded"}}},
			"bedrock": {startAs("bedrock", evStart(nil)), evText(0, "Hel"),
				{Type: EventError, Err: &Error{Status: 503, Type: "serviceUnavailableException", Message: "Overloaded"}}},
		},
	},
	{
		name: "stop by max tokens, usage with cache tokens",
		events: []Event{evStart(&Usage{Input: 12, CacheRead: 2048, CacheWrite: 1500}), evText(0, "Once upon"), evBlockStop(0),
			evDelta(StopMaxTokens, Usage{Input: 12, Output: 503, CacheRead: 2048, CacheWrite: 1500}), evStop},
		wire: map[string][]Frame{
			"openai": {oaRole, oaText("Once upon"), oaChunk(`{}`, `"length"`),
				oaUsageChunk(`{"prompt_tokens":3560,"completion_tokens":503,"total_tokens":4063,"prompt_tokens_details":{"cached_tokens":2048}}`), oaDone},
			"anthropic": {anStart(`{"input_tokens":12,"cache_creation_input_tokens":1500,"cache_read_input_tokens":2048,"output_tokens":0}`),
				anTextStart(0), anText(0, "Once upon"), anStop(0),
				anDelta("max_tokens", `{"input_tokens":12,"cache_creation_input_tokens":1500,"cache_read_input_tokens":2048,"output_tokens":503}`), anEnd},
			"gemini": {geText("Once upon"), geChunk(`[{"text":""}]`, "MAX_TOKENS",
				`{"promptTokenCount":3560,"candidatesTokenCount":503,"totalTokenCount":4063,"cachedContentTokenCount":2048}`)},
			"bedrock": append([]Frame{brStart, brText(0, "Once upon"), brStop(0)}, brEnd("max_tokens",
				`{"inputTokens":12,"outputTokens":503,"totalTokens":4063,"cacheReadInputTokens":2048,"cacheWriteInputTokens":1500}`)...),
		},
		decoded: map[string][]Event{ // OpenAI and Gemini count no cache writes apart
			"openai": {startAs("openai", evStart(nil)), evText(0, "Once upon"), evBlockStop(0),
				evDelta(StopMaxTokens, Usage{Input: 1512, Output: 503, CacheRead: 2048}), evStop},
			"gemini": {startAs("gemini", evStart(nil)), evText(0, "Once upon"), evBlockStop(0),
				evDelta(StopMaxTokens, Usage{Input: 1512, Output: 503, CacheRead: 2048}), evStop},
		},
	},
}

// decodedWant is what name's decoder reads from its stream of c.
func (c *streamCase) decodedWant(name string) []Event {
	if evs, ok := c.decoded[name]; ok {
		return evs
	}
	evs := append([]Event(nil), c.events...)
	evs[0] = startAs(name, evs[0])
	return evs
}

// encodeAll writes events as name's stream, for a client that asked for
// the usage.
func encodeAll(name string, events []Event) ([]Frame, error) {
	enc := codecs[name].NewStreamEncoder(&Request{Stream: true, IncludeUsage: true})
	var out []Frame
	for _, ev := range events {
		var err error
		if out, err = enc.Encode(out, ev); err != nil {
			return out, err
		}
	}
	return out, nil
}

// decodeAll reads name's stream, and its end.
func decodeAll(name string, frames []Frame) ([]Event, error) {
	dec := codecs[name].NewStreamDecoder()
	var out []Event
	for _, f := range frames {
		var err error
		if out, err = dec.Decode(out, f); err != nil {
			return out, err
		}
	}
	return dec.End(out), nil
}

// checkFrames fails t unless got are want: the same names, the same kind,
// the same JSON (or the same bytes, for [DONE]).
func checkFrames(t *testing.T, what string, got, want []Frame) {
	t.Helper()
	for i := 0; i < max(len(got), len(want)); i++ {
		switch {
		case i >= len(got):
			t.Errorf("%s: frame %d missing, want %s %s", what, i, want[i].Event, want[i].Data)
		case i >= len(want):
			t.Errorf("%s: frame %d more than wanted: %s %s", what, i, got[i].Event, got[i].Data)
		case got[i].Event != want[i].Event || got[i].Exception != want[i].Exception ||
			(string(got[i].Data) != string(want[i].Data) && !jsonEqual(got[i].Data, want[i].Data)):
			t.Errorf("%s: frame %d:\n got %q %v %s\nwant %q %v %s", what, i, got[i].Event, got[i].Exception, got[i].Data,
				want[i].Event, want[i].Exception, strings.Join(strings.Fields(string(want[i].Data)), " "))
		}
	}
}

// TestEncodeStream: the model's events as each API's stream, exactly.
func TestEncodeStream(t *testing.T) {
	for _, c := range streamCases {
		for _, name := range codecNames {
			got, err := encodeAll(name, c.events)
			if err != nil {
				t.Errorf("%s %s: %v", c.name, name, err)
				continue
			}
			checkFrames(t, c.name+" "+name, got, c.wire[name])
		}
	}
}

// TestDecodeStream: each API's stream read back into events.
func TestDecodeStream(t *testing.T) {
	for _, c := range streamCases {
		for _, name := range codecNames {
			got, err := decodeAll(name, c.wire[name])
			if err != nil {
				t.Errorf("%s %s: %v", c.name, name, err)
				continue
			}
			checkModel(t, c.name+" "+name, got, c.decodedWant(name))
		}
	}
}

// TestStreamMatrix: every API's stream written as every other's: no error,
// and the answer a client of the target folds from it is the answer the
// source's stream makes, less what the target cannot say.
func TestStreamMatrix(t *testing.T) {
	for _, c := range streamCases {
		for _, src := range codecNames {
			evs, err := decodeAll(src, c.wire[src])
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, src, err)
			}
			want := fold(t, evs)
			for _, dst := range codecNames {
				frames, err := encodeAll(dst, evs)
				if err != nil {
					t.Errorf("%s %s->%s: %v", c.name, src, dst, err)
					continue
				}
				back, err := decodeAll(dst, frames)
				if err != nil {
					t.Errorf("%s %s->%s: the target's stream does not read back: %v", c.name, src, dst, err)
					continue
				}
				got := fold(t, back)
				w := want
				w.ID, w.Model, w.Created, w.UsageAtStart = got.ID, got.Model, got.Created, got.UsageAtStart
				if dst == "openai" || dst == "gemini" { // no cache writes apart
					w.Usage.Input += w.Usage.CacheWrite
					w.Usage.CacheWrite = 0
				}
				if dst != "anthropic" {
					w.StopSequence = ""
				}
				if dst == "gemini" {
					w.IDs = got.IDs // made up
				}
				if w.Err != nil && dst != "anthropic" {
					w.Usage = Usage{} // known at the start: only Anthropic's start says it
				}
				if w.Err != nil { // each API's error says its status its way (TestErrorStatus)
					e := *w.Err
					e.Status = errorStatusVia(dst, e.Status)
					w.Err = &e
				}
				checkModel(t, c.name+" "+src+"->"+dst, got, w)
			}
		}
	}
}

// folded is what a client makes of a stream.
type folded struct {
	Answer
	UsageAtStart bool
	IDs          []string
	Err          *Error
	Done         bool
}

func fold(t *testing.T, evs []Event) folded {
	t.Helper()
	var c Collector
	var f folded
	for _, ev := range evs {
		if err := c.Add(ev); err != nil {
			t.Fatalf("fold: %v", err)
		}
		if ev.Type == EventStart && ev.Usage != nil {
			f.UsageAtStart = true
		}
	}
	a, err := c.Answer()
	f.Answer, f.Err, f.Done = *a, err, c.Done()
	for i, p := range f.Content {
		if p.Type == PartToolCall {
			f.IDs = append(f.IDs, p.ToolCall.ID)
			call := *p.ToolCall
			call.ID = ""
			f.Content[i].ToolCall = &call
			call.Args = compact(call.Args)
		}
	}
	if f.Err != nil {
		e := *f.Err
		e.Type = "" // each API's own name
		f.Err = &e
	}
	return f
}

// TestTranslateStream: an upstream's stream as the client's SDK reads
// it, frame by frame, for the pairs gateways are known to get wrong:
// tool arguments streamed in pieces, two calls in parallel, an error
// after the stream began, the usage's cache tokens.
func TestTranslateStream(t *testing.T) {
	tools := streamCases[1].wire
	startZero := anStart(`{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}`)
	tests := []struct {
		name     string
		src, dst string
		in       []Frame
		want     []Frame
	}{
		{"tools", "gemini", "anthropic", tools["gemini"], []Frame{startZero,
			anTextStart(0), anText(0, "Checking."), anStop(0),
			// Gemini's whole arguments, as one input_json_delta: never an
			// empty input.
			anToolStart(1, "call_a1_0", "get_weather"), anArgs(1, `{"city":"Paris"}`), anStop(1),
			anToolStart(2, "call_a1_1", "get_time"), anArgs(2, `{"tz":"Europe/Rome"}`), anStop(2),
			anDelta("tool_use", `{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":15}`), anEnd}},
		{"tools", "openai", "anthropic", tools["openai"], []Frame{startZero,
			anTextStart(0), anText(0, "Checking."), anStop(0),
			anToolStart(1, "call_a1_0", "get_weather"), anArgs(1, `{"city":`), anArgs(1, `"Paris"}`), anStop(1),
			anToolStart(2, "call_a1_1", "get_time"), anArgs(2, `{"tz":"Eu`), anArgs(2, `rope/Rome"}`), anStop(2),
			anDelta("tool_use", `{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":15}`), anEnd}},
		{"tools", "anthropic", "openai", tools["anthropic"], tools["openai"]},
		{"tools", "bedrock", "openai", tools["bedrock"], tools["openai"]},
		{"tools", "anthropic", "bedrock", tools["anthropic"], tools["bedrock"]},
		{"tools", "openai", "gemini", tools["openai"], tools["gemini"]},
		{"error", "anthropic", "openai", streamCases[2].wire["anthropic"], streamCases[2].wire["openai"]},
		{"error", "openai", "anthropic", streamCases[2].wire["openai"], []Frame{startZero, anTextStart(0), anText(0, "Hel"),
			sse("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)}},
		{"error", "gemini", "openai", streamCases[2].wire["gemini"], []Frame{oaRole, oaText("Hel"),
			sse("", `{"error":{"message":"Overloaded","type":"server_error","param":null,"code":null}}`)}},
		{"cache usage", "openai", "anthropic", streamCases[3].wire["openai"], []Frame{startZero,
			anTextStart(0), anText(0, "Once upon"), anStop(0),
			// 3560 prompt tokens, 2048 of them read from the cache.
			anDelta("max_tokens", `{"input_tokens":1512,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":503}`), anEnd}},
		{"cache usage", "anthropic", "openai", streamCases[3].wire["anthropic"], streamCases[3].wire["openai"]},
		{"cache usage", "bedrock", "anthropic", streamCases[3].wire["bedrock"], []Frame{startZero,
			anTextStart(0), anText(0, "Once upon"), anStop(0),
			anDelta("max_tokens", `{"input_tokens":12,"cache_creation_input_tokens":1500,"cache_read_input_tokens":2048,"output_tokens":503}`), anEnd}},
	}
	for _, tt := range tests {
		evs, err := decodeAll(tt.src, tt.in)
		if err != nil {
			t.Errorf("%s %s->%s: decode: %v", tt.name, tt.src, tt.dst, err)
			continue
		}
		stamp(evs)
		got, err := encodeAll(tt.dst, evs)
		if err != nil {
			t.Errorf("%s %s->%s: encode: %v", tt.name, tt.src, tt.dst, err)
			continue
		}
		checkFrames(t, tt.name+" "+tt.src+"->"+tt.dst, got, tt.want)
	}
}

// stamp sets on a stream's start what its source did not say, as the
// gateway does: the answer's id it makes, the model, the time.
func stamp(evs []Event) {
	for i, ev := range evs {
		if ev.Type == EventStart {
			evs[i].ID = cmp.Or(ev.ID, "a1")
			evs[i].Model = cmp.Or(ev.Model, "m")
			evs[i].Created = cmp.Or(ev.Created, 1700000000)
		}
	}
}

// TestStreamCut: a stream whose bytes end before its end is never a clean
// end for the client: the decoder's End is an error, written as the
// client API's error event.
func TestStreamCut(t *testing.T) {
	for _, c := range streamCases[:2] {
		for _, src := range codecNames {
			frames := c.wire[src]
			cut := frames[:len(frames)-1] // the last frame lost
			if src == "bedrock" {
				cut = frames[:len(frames)-2] // messageStop and metadata
			}
			evs, err := decodeAll(src, cut)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, src, err)
			}
			last := evs[len(evs)-1]
			if last.Type != EventError || last.Err.Status != 502 {
				t.Errorf("%s %s cut: the last event is %+v, not the cut's error", c.name, src, last)
				continue
			}
			for _, dst := range codecNames {
				out, err := encodeAll(dst, evs)
				if err != nil {
					t.Errorf("%s %s->%s: %v", c.name, src, dst, err)
					continue
				}
				end := out[len(out)-1]
				var clean bool
				switch dst {
				case "openai":
					clean = string(end.Data) == "[DONE]" || !strings.HasPrefix(string(end.Data), `{"error"`)
				case "anthropic":
					clean = end.Event != "error"
				case "gemini":
					clean = !strings.HasPrefix(string(end.Data), `{"error"`)
				case "bedrock":
					clean = !end.Exception || end.Event != "modelStreamErrorException"
				}
				if clean {
					t.Errorf("%s %s->%s: a cut stream ends with %q %s", c.name, src, dst, end.Event, end.Data)
				}
			}
		}
	}
}

// TestStreamTextAndCallInOneDelta: an OpenAI-compatible server may send
// text and a tool call's start in one chunk; neither is lost.
func TestStreamTextAndCallInOneDelta(t *testing.T) {
	in := []Frame{oaRole,
		oaChunk(`{"content":"Let me look.","tool_calls":[{"index":0,"id":"call_9","type":"function","function":{"name":"search","arguments":"{\"q\":"}}]}`, "null"),
		oaToolArgs(0, `"go"}`), oaChunk(`{}`, `"tool_calls"`), oaDone}
	evs, err := decodeAll("openai", in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := encodeAll("anthropic", evs)
	if err != nil {
		t.Fatal(err)
	}
	checkFrames(t, "openai->anthropic", got, []Frame{
		sse("message_start", `{"type":"message_start","message":{"id":"a1","type":"message","role":"assistant","model":"m",
			"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`),
		anTextStart(0), anText(0, "Let me look."), anStop(0),
		anToolStart(1, "call_9", "search"), anArgs(1, `{"q":`), anArgs(1, `"go"}`), anStop(1),
		sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":0}}`),
		anEnd})
}

// TestStreamInterleavedCalls: OpenAI-compatible servers may interleave
// two calls' arguments. Anthropic's stream cannot (one block at a time):
// its encoder holds a call begun while another's arguments are not yet
// whole JSON, gathers its arguments, and writes it when the other ends,
// each block whole in turn; Bedrock's and Gemini's streams carry the
// interleaving as it is.
func TestStreamInterleavedCalls(t *testing.T) {
	in := []Frame{oaRole, oaToolStart(0, "c0", "a"), oaToolStart(1, "c1", "b"), oaToolArgs(1, `{"y":`), oaToolArgs(0, `{"x":`),
		oaToolArgs(0, `1}`), oaToolArgs(1, `2}`), oaChunk(`{}`, `"tool_calls"`), oaDone}
	evs, err := decodeAll("openai", in)
	if err != nil {
		t.Fatal(err)
	}
	an, err := encodeAll("anthropic", evs)
	if err != nil {
		t.Fatal(err)
	}
	checkFrames(t, "openai->anthropic", an, []Frame{
		sse("message_start", `{"type":"message_start","message":{"id":"a1","type":"message","role":"assistant","model":"m",
			"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`),
		anToolStart(0, "c0", "a"), anArgs(0, `{"x":`), anArgs(0, `1}`), anStop(0),
		anToolStart(1, "c1", "b"), anArgs(1, `{"y":`), anArgs(1, `2}`), anStop(1),
		sse("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":0}}`),
		anEnd})
	for _, dst := range []string{"anthropic", "gemini", "bedrock"} {
		frames, err := encodeAll(dst, evs)
		if err != nil {
			t.Errorf("%s: %v", dst, err)
			continue
		}
		back, err := decodeAll(dst, frames)
		if err != nil {
			t.Errorf("%s: %v", dst, err)
			continue
		}
		f := fold(t, back)
		if len(f.Content) != 2 || string(f.Content[0].ToolCall.Args) != `{"x":1}` || string(f.Content[1].ToolCall.Args) != `{"y":2}` {
			t.Errorf("%s: folded %s", dst, modelJSON(t, f.Content))
		}
	}
}

// TestStreamRefuses: stream events that hold what the model does not
// carry, or that do not fit the events before them.
func TestStreamRefuses(t *testing.T) {
	tests := []struct {
		codec  Codec
		frames []Frame
		want   string
		is     error
	}{
		{Anthropic, []Frame{anStart(anUsage), sse("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`)},
			"Anthropic stream's thinking block is not in the chat model", ErrUnsupported},
		{Anthropic, []Frame{anTextStart(0)}, "content_block_start before message_start", ErrMalformed},
		{Anthropic, []Frame{anStart(anUsage), anText(3, "x")}, "a delta of block 3, which is not open", ErrMalformed},
		{OpenAI, []Frame{oaChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`, "null")},
			"tool call 0 begins without an id and a name", ErrMalformed},
		{OpenAI, []Frame{sse("", `{"choices":[`)}, "malformed OpenAI stream event", ErrMalformed},
		{Gemini, []Frame{geChunk(`[{"text":"hm","thought":true}]`, "", "")}, "Gemini answer's thought part", ErrUnsupported},
		{Bedrock, []Frame{brStart, br("contentBlockDelta", `{"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hm"}}}`)},
			"Bedrock stream's reasoningContent delta", ErrUnsupported},
		{Bedrock, []Frame{brStart, br("metadata", `{"usage":{}}`)}, "metadata before messageStop", ErrMalformed},
	}
	for _, tt := range tests {
		_, err := decodeAll(tt.codec.Name(), tt.frames)
		checkErr(t, tt.codec.Name(), err, tt.want)
		if err != nil && !errors.Is(err, tt.is) {
			t.Errorf("%s: %v is not %v", tt.codec.Name(), err, tt.is)
		}
	}
}

// errorStatusVia is the status an error of status reads as once written
// as dst's stream error event.
func errorStatusVia(dst string, status int) int {
	c := codecs[dst]
	if dst == "bedrock" {
		return bedrockStatuses[strings.ToLower(exceptionName(status))]
	}
	return c.DecodeError(0, c.EncodeError(&Error{Status: status})).Status
}

// TestStreamAzureFilterChunk: Azure OpenAI sends the prompt's filter
// results first, in a chunk of no choices and no id; the answer starts
// with the chunk after it.
func TestStreamAzureFilterChunk(t *testing.T) {
	in := []Frame{sse("", `{"choices":[],"created":0,"id":"","model":"","object":"","prompt_filter_results":[{"prompt_index":0,
		"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}]}`),
		oaRole, oaText("Hi"), oaChunk(`{}`, `"stop"`), oaDone}
	evs, err := decodeAll("openai", in)
	if err != nil {
		t.Fatal(err)
	}
	checkModel(t, "azure", evs, []Event{startAs("openai", evStart(nil)), evText(0, "Hi"), evBlockStop(0),
		{Type: EventDelta, Stop: StopEndTurn}, evStop})
}
