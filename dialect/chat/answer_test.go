package chat

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// answerCase is one answer in the model and as each API writes it.
type answerCase struct {
	name    string
	answer  Answer
	wire    map[string]string  // or "error: …"
	decoded map[string]*Answer // where the API's wire carries less than answer
	across  map[string]string  // "gemini->openai": where not the target's wire
}

// oaAnswer is an OpenAI chat completion of one choice.
func oaAnswer(message, finish, usage string) string {
	return `{"id":"a1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":` +
		message + `,"logprobs":null,"finish_reason":"` + finish + `"}],"usage":` + usage + `}`
}

// anAnswer is an Anthropic message.
func anAnswer(content, stop, usage string) string {
	return `{"id":"a1","type":"message","role":"assistant","model":"m","content":` + content + `,"stop_reason":"` + stop +
		`","stop_sequence":null,"usage":` + usage + `}`
}

// geAnswer is a Gemini answer of one candidate.
func geAnswer(parts, finish, usage string) string {
	return `{"candidates":[{"content":{"parts":` + parts + `,"role":"model"},"finishReason":"` + finish + `","index":0}],
		"usageMetadata":` + usage + `,"modelVersion":"m","responseId":"a1"}`
}

// brAnswer is a Converse answer.
func brAnswer(content, stop, usage string) string {
	return `{"output":{"message":{"role":"assistant","content":` + content + `}},"stopReason":"` + stop + `","usage":` + usage +
		`,"metrics":{"latencyMs":0}}`
}

const (
	oaUsage = `{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,"prompt_tokens_details":{"cached_tokens":0}}`
	anUsage = `{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}`
	geUsage = `{"promptTokenCount":10,"candidatesTokenCount":3,"totalTokenCount":13}`
	brUsage = `{"inputTokens":10,"outputTokens":3,"totalTokens":13}`
)

// small is the usage of most answer cases.
var small = Usage{Input: 10, Output: 3}

// anAnswerSeq is an Anthropic message that a stop sequence ended.
func anAnswerSeq(content, seq, usage string) string {
	return `{"id":"a1","type":"message","role":"assistant","model":"m","content":` + content +
		`,"stop_reason":"stop_sequence","stop_sequence":"` + seq + `","usage":` + usage + `}`
}

var answerCases = []answerCase{
	{
		name:   "text",
		answer: Answer{ID: "a1", Model: "m", Created: 1700000000, Content: []Part{Text("Hello there.")}, Stop: StopEndTurn, Usage: small},
		wire: map[string]string{
			"openai":    oaAnswer(`{"role":"assistant","content":"Hello there.","refusal":null}`, "stop", oaUsage),
			"anthropic": anAnswer(`[{"type":"text","text":"Hello there."}]`, "end_turn", anUsage),
			"gemini":    geAnswer(`[{"text":"Hello there."}]`, "STOP", geUsage),
			"bedrock":   brAnswer(`[{"text":"Hello there."}]`, "end_turn", brUsage),
		},
	},
	{
		name: "one tool call",
		answer: Answer{ID: "a1", Model: "m", Created: 1700000000, Stop: StopToolUse, Usage: small,
			Content: []Part{Text("Let me check."), call("call_a1_0", "get_weather", `{"city":"Paris"}`)}},
		wire: map[string]string{
			"openai": oaAnswer(`{"role":"assistant","content":"Let me check.","tool_calls":[{"id":"call_a1_0","type":"function",
				"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}],"refusal":null}`, "tool_calls", oaUsage),
			"anthropic": anAnswer(`[{"type":"text","text":"Let me check."},
				{"type":"tool_use","id":"call_a1_0","name":"get_weather","input":{"city":"Paris"}}]`, "tool_use", anUsage),
			"gemini": geAnswer(`[{"text":"Let me check."},{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}}]`, "STOP", geUsage),
			"bedrock": brAnswer(`[{"text":"Let me check."},{"toolUse":{"toolUseId":"call_a1_0","name":"get_weather",
				"input":{"city":"Paris"}}}]`, "tool_use", brUsage),
		},
	},
	{
		name: "parallel tool calls",
		answer: Answer{ID: "a1", Model: "m", Created: 1700000000, Stop: StopToolUse, Usage: small, Content: []Part{
			call("call_a1_0", "get_weather", `{"city":"Paris"}`), call("call_a1_1", "get_time", `{"tz":"Europe/Rome"}`)}},
		wire: map[string]string{
			"openai": oaAnswer(`{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_a1_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"call_a1_1","type":"function","function":{"name":"get_time","arguments":"{\"tz\":\"Europe/Rome\"}"}}],
				"refusal":null}`, "tool_calls", oaUsage),
			"anthropic": anAnswer(`[{"type":"tool_use","id":"call_a1_0","name":"get_weather","input":{"city":"Paris"}},
				{"type":"tool_use","id":"call_a1_1","name":"get_time","input":{"tz":"Europe/Rome"}}]`, "tool_use", anUsage),
			"gemini": geAnswer(`[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},
				{"functionCall":{"name":"get_time","args":{"tz":"Europe/Rome"}}}]`, "STOP", geUsage),
			"bedrock": brAnswer(`[{"toolUse":{"toolUseId":"call_a1_0","name":"get_weather","input":{"city":"Paris"}}},
				{"toolUse":{"toolUseId":"call_a1_1","name":"get_time","input":{"tz":"Europe/Rome"}}}]`, "tool_use", brUsage),
		},
	},
	{
		name:   "stop by max tokens",
		answer: Answer{ID: "a1", Model: "m", Created: 1700000000, Content: []Part{Text("Once upon a")}, Stop: StopMaxTokens, Usage: small},
		wire: map[string]string{
			"openai":    oaAnswer(`{"role":"assistant","content":"Once upon a","refusal":null}`, "length", oaUsage),
			"anthropic": anAnswer(`[{"type":"text","text":"Once upon a"}]`, "max_tokens", anUsage),
			"gemini":    geAnswer(`[{"text":"Once upon a"}]`, "MAX_TOKENS", geUsage),
			"bedrock":   brAnswer(`[{"text":"Once upon a"}]`, "max_tokens", brUsage),
		},
	},
	{
		name: "usage with cache tokens",
		answer: Answer{ID: "a1", Model: "m", Created: 1700000000, Content: []Part{Text("Cached.")}, Stop: StopEndTurn,
			Usage: Usage{Input: 12, Output: 503, CacheRead: 2048, CacheWrite: 1500}},
		wire: map[string]string{
			// OpenAI's prompt_tokens hold every prompt token: 12 + 2048 + 1500.
			"openai": oaAnswer(`{"role":"assistant","content":"Cached.","refusal":null}`, "stop",
				`{"prompt_tokens":3560,"completion_tokens":503,"total_tokens":4063,"prompt_tokens_details":{"cached_tokens":2048}}`),
			"anthropic": anAnswer(`[{"type":"text","text":"Cached."}]`, "end_turn",
				`{"input_tokens":12,"cache_creation_input_tokens":1500,"cache_read_input_tokens":2048,"output_tokens":503}`),
			"gemini": geAnswer(`[{"text":"Cached."}]`, "STOP",
				`{"promptTokenCount":3560,"candidatesTokenCount":503,"totalTokenCount":4063,"cachedContentTokenCount":2048}`),
			"bedrock": brAnswer(`[{"text":"Cached."}]`, "end_turn",
				`{"inputTokens":12,"outputTokens":503,"totalTokens":4063,"cacheReadInputTokens":2048,"cacheWriteInputTokens":1500}`),
		},
		decoded: map[string]*Answer{
			// OpenAI and Gemini count no cache writes apart: they are input.
			"openai": {ID: "a1", Model: "m", Created: 1700000000, Content: []Part{Text("Cached.")}, Stop: StopEndTurn,
				Usage: Usage{Input: 1512, Output: 503, CacheRead: 2048}},
			"gemini": {ID: "a1", Model: "m", Content: []Part{Text("Cached.")}, Stop: StopEndTurn,
				Usage: Usage{Input: 1512, Output: 503, CacheRead: 2048}},
		},
		across: map[string]string{
			"openai->anthropic": anAnswer(`[{"type":"text","text":"Cached."}]`, "end_turn",
				`{"input_tokens":1512,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":503}`),
			"openai->bedrock": brAnswer(`[{"text":"Cached."}]`, "end_turn",
				`{"inputTokens":1512,"outputTokens":503,"totalTokens":4063,"cacheReadInputTokens":2048}`),
			"gemini->anthropic": anAnswer(`[{"type":"text","text":"Cached."}]`, "end_turn",
				`{"input_tokens":1512,"cache_creation_input_tokens":0,"cache_read_input_tokens":2048,"output_tokens":503}`),
			"gemini->bedrock": brAnswer(`[{"text":"Cached."}]`, "end_turn",
				`{"inputTokens":1512,"outputTokens":503,"totalTokens":4063,"cacheReadInputTokens":2048}`),
		},
	},
	{
		name:   "a stop sequence",
		answer: Answer{ID: "a1", Model: "m", Created: 1700000000, Content: []Part{Text("1, 2, ")}, Stop: StopSequence, StopSequence: "3", Usage: small},
		wire: map[string]string{
			"openai":    oaAnswer(`{"role":"assistant","content":"1, 2, ","refusal":null}`, "stop", oaUsage),
			"anthropic": anAnswerSeq(`[{"type":"text","text":"1, 2, "}]`, "3", anUsage),
			"gemini":    geAnswer(`[{"text":"1, 2, "}]`, "STOP", geUsage),
			"bedrock":   brAnswer(`[{"text":"1, 2, "}]`, "stop_sequence", brUsage),
		},
		decoded: map[string]*Answer{
			"openai":  {ID: "a1", Model: "m", Created: 1700000000, Content: []Part{Text("1, 2, ")}, Stop: StopEndTurn, Usage: small},
			"gemini":  {ID: "a1", Model: "m", Content: []Part{Text("1, 2, ")}, Stop: StopEndTurn, Usage: small},
			"bedrock": {Content: []Part{Text("1, 2, ")}, Stop: StopSequence, Usage: small},
		},
		across: map[string]string{
			"openai->anthropic":  anAnswer(`[{"type":"text","text":"1, 2, "}]`, "end_turn", anUsage),
			"openai->bedrock":    brAnswer(`[{"text":"1, 2, "}]`, "end_turn", brUsage),
			"gemini->anthropic":  anAnswer(`[{"type":"text","text":"1, 2, "}]`, "end_turn", anUsage),
			"gemini->bedrock":    brAnswer(`[{"text":"1, 2, "}]`, "end_turn", brUsage),
			"bedrock->anthropic": `{"id":"","type":"message","role":"assistant","model":"","content":[{"type":"text","text":"1, 2, "}],"stop_reason":"stop_sequence","stop_sequence":null,"usage":` + anUsage + `}`,
		},
	},
	{
		name:   "a content filter",
		answer: Answer{ID: "a1", Model: "m", Created: 1700000000, Content: []Part{Text("I can't")}, Stop: StopContentFilter, Usage: small},
		wire: map[string]string{
			"openai":    oaAnswer(`{"role":"assistant","content":"I can't","refusal":null}`, "content_filter", oaUsage),
			"anthropic": anAnswer(`[{"type":"text","text":"I can't"}]`, "refusal", anUsage),
			"gemini":    geAnswer(`[{"text":"I can't"}]`, "SAFETY", geUsage),
			"bedrock":   brAnswer(`[{"text":"I can't"}]`, "content_filtered", brUsage),
		},
	},
	{
		name:   "the model failed",
		answer: Answer{ID: "a1", Model: "m", Created: 1700000000, Stop: StopError, Usage: small},
		wire: map[string]string{
			"openai":    "error: OpenAI cannot take stop reason error",
			"anthropic": "error: Anthropic cannot take stop reason error",
			"gemini":    `{"candidates":[{"content":{"parts":[],"role":"model"},"finishReason":"OTHER","index":0}],"usageMetadata":` + geUsage + `,"modelVersion":"m","responseId":"a1"}`,
			"bedrock":   "error: Bedrock cannot take stop reason error",
		},
	},
}

// decodedWant is what name's decoder reads back from its wire of c: the
// answer, less what the API does not carry (OpenAI alone says when;
// Bedrock names neither the answer nor the model).
func (c *answerCase) decodedWant(name string) *Answer {
	if a, ok := c.decoded[name]; ok {
		return a
	}
	a := c.answer
	if name != "openai" {
		a.Created = 0
	}
	if name == "bedrock" {
		a.ID, a.Model = "", ""
	}
	return &a
}

func TestEncodeAnswer(t *testing.T) {
	for _, c := range answerCases {
		for _, name := range codecNames {
			want := c.wire[name]
			got, err := codecs[name].EncodeAnswer(&c.answer)
			if msg, isErr := isErrWant(want); isErr {
				checkErr(t, c.name+" "+name, err, msg)
				if err != nil && !errors.Is(err, ErrUnsupported) {
					t.Errorf("%s %s: %v is not ErrUnsupported", c.name, name, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", c.name, name, err)
				continue
			}
			checkJSON(t, c.name+" "+name, got, want)
		}
	}
}

func TestAnswerRoundTrip(t *testing.T) {
	for _, c := range answerCases {
		for _, name := range codecNames {
			wire := c.wire[name]
			if _, isErr := isErrWant(wire); isErr {
				continue
			}
			a, err := codecs[name].DecodeAnswer([]byte(wire))
			if err != nil {
				t.Errorf("%s %s: decode: %v", c.name, name, err)
				continue
			}
			checkModel(t, c.name+" "+name+" decoded", a, c.decodedWant(name))
			again, err := codecs[name].EncodeAnswer(a)
			if err != nil {
				t.Errorf("%s %s: encode again: %v", c.name, name, err)
				continue
			}
			if _, lossy := c.decoded[name]; !lossy {
				checkJSON(t, c.name+" "+name+" again", again, wire)
			}
		}
	}
}

// TestTranslateAnswer: every API's answer written for every other: the
// target's own wire, or what the source carries.
func TestTranslateAnswer(t *testing.T) {
	for _, c := range answerCases {
		for _, src := range codecNames {
			in := c.wire[src]
			if _, isErr := isErrWant(in); isErr {
				continue
			}
			a, err := codecs[src].DecodeAnswer([]byte(in))
			if err != nil {
				t.Errorf("%s %s: decode: %v", c.name, src, err)
				continue
			}
			for _, dst := range codecNames {
				if dst == src {
					continue
				}
				pair := src + "->" + dst
				want, ok := c.across[pair]
				if !ok {
					want = c.wire[dst]
				}
				got, err := codecs[dst].EncodeAnswer(a)
				if msg, isErr := isErrWant(want); isErr {
					checkErr(t, c.name+" "+pair, err, msg)
					continue
				}
				if err != nil {
					t.Errorf("%s %s: %v", c.name, pair, err)
					continue
				}
				// What the source does not carry (OpenAI's created, the ids
				// and model Bedrock does not name) is compared as the target
				// writes it from what it got.
				want = string(mustEncodeAnswer(t, dst, a, want))
				checkJSON(t, c.name+" "+pair, got, want)
			}
		}
	}
}

// mustEncodeAnswer returns want, but with the members the source could
// not carry (id, model, created) as the decoded answer a has them.
func mustEncodeAnswer(t *testing.T, dst string, a *Answer, want string) []byte {
	t.Helper()
	w, err := codecs[dst].DecodeAnswer([]byte(want))
	if err != nil {
		t.Fatalf("%s: the want does not decode: %v", dst, err)
	}
	w.ID, w.Model, w.Created = a.ID, a.Model, a.Created
	b, err := codecs[dst].EncodeAnswer(w)
	if err != nil {
		t.Fatalf("%s: %v", dst, err)
	}
	return b
}

// TestUsageCacheTokens: the cached tokens of answers providers gave,
// each API's way: OpenAI's prompt_tokens and Gemini's promptTokenCount
// hold them, Anthropic's input_tokens does not.
func TestUsageCacheTokens(t *testing.T) {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "usage", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		codec Codec
		body  []byte
		want  Usage
	}{
		{OpenAI, read("openai_chat.json"), Usage{Input: 86, Output: 300, CacheRead: 1920}},
		{Anthropic, read("anthropic_message.json"), Usage{Input: 12, Output: 503, CacheRead: 2048, CacheWrite: 1500}},
		{Gemini, []byte(`{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],
			"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":40,"thoughtsTokenCount":60,
			"cachedContentTokenCount":800,"totalTokenCount":1100},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`),
			Usage{Input: 200, Output: 100, CacheRead: 800}},
		{Bedrock, []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"Hi"}]}},"stopReason":"end_turn",
			"usage":{"inputTokens":5,"outputTokens":7,"totalTokens":3012,"cacheReadInputTokens":2000,"cacheWriteInputTokens":1000}}`),
			Usage{Input: 5, Output: 7, CacheRead: 2000, CacheWrite: 1000}},
	}
	for _, tt := range tests {
		a, err := tt.codec.DecodeAnswer(tt.body)
		if err != nil {
			t.Fatalf("%s: %v", tt.codec.Name(), err)
		}
		if a.Usage != tt.want {
			t.Errorf("%s: usage %+v, want %+v", tt.codec.Name(), a.Usage, tt.want)
		}
	}
	// The OpenAI answer as an Anthropic client reads it: the 1920 cached
	// tokens are not input tokens.
	a, _ := OpenAI.DecodeAnswer(read("openai_chat.json"))
	b, err := Anthropic.EncodeAnswer(a)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Usage map[string]int64 `json:"usage"`
	}
	if err := unmarshal(b, &got, "answer"); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"input_tokens": 86, "cache_read_input_tokens": 1920, "cache_creation_input_tokens": 0, "output_tokens": 300}
	for k, v := range want {
		if got.Usage[k] != v {
			t.Errorf("as Anthropic's: %s = %d, want %d", k, got.Usage[k], v)
		}
	}
}

// TestDecodeAnswerRefuses: answers that hold what the model does not
// carry, or that are not answers.
func TestDecodeAnswerRefuses(t *testing.T) {
	tests := []struct {
		codec Codec
		body  string
		want  string
		is    error
	}{
		{OpenAI, `{"choices":[{"message":{"content":"a"},"finish_reason":"stop"},{"message":{"content":"b"},"finish_reason":"stop"}]}`,
			"OpenAI answer with 2 choices is not in the chat model", ErrUnsupported},
		{OpenAI, `{"choices":[{"message":{"content":"a"},"logprobs":{"content":[]},"finish_reason":"stop"}]}`,
			"OpenAI answer's logprobs", ErrUnsupported},
		{OpenAI, `{"choices":[`, "malformed OpenAI answer", ErrMalformed},
		{Anthropic, `{"type":"message","content":[{"type":"thinking","thinking":"hm","signature":"s"}],"stop_reason":"end_turn"}`,
			"Anthropic answer's thinking block is not in the chat model", ErrUnsupported},
		{Anthropic, `{"type":"message","content":[{"type":"text","text":"a","input":{}}],"stop_reason":"end_turn"}`,
			"Anthropic answer's text block is not in the chat model", ErrUnsupported}, // a member of another block type
		{Anthropic, `{"type":"message","content":[],"stop_reason":"pause_turn"}`, `stop_reason "pause_turn"`, ErrUnsupported},
		{Anthropic, `{"type":"error","error":{"type":"overloaded_error"}}`, "type \"error\", not message", ErrMalformed},
		{Gemini, `{"candidates":[{"content":{"parts":[{"text":"hm","thought":true}]},"finishReason":"STOP"}]}`,
			"Gemini answer's thought part", ErrUnsupported},
		{Gemini, `{"candidates":[{},{}]}`, "answer with 2 candidates", ErrUnsupported},
		{Bedrock, `{"output":{"message":{"content":[{"reasoningContent":{"reasoningText":{"text":"hm"}}}]}},"stopReason":"end_turn"}`,
			"Bedrock answer's reasoningContent block", ErrUnsupported},
	}
	for _, tt := range tests {
		_, err := tt.codec.DecodeAnswer([]byte(tt.body))
		checkErr(t, tt.codec.Name(), err, tt.want)
		if err != nil && !errors.Is(err, tt.is) {
			t.Errorf("%s: %v is not %v", tt.codec.Name(), err, tt.is)
		}
	}
}

// TestGeminiBlockedPrompt: a prompt Gemini blocked has no candidates; it
// is an answer that a content filter ended.
func TestGeminiBlockedPrompt(t *testing.T) {
	a, err := Gemini.DecodeAnswer([]byte(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":8,"totalTokenCount":8}}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Stop != StopContentFilter || len(a.Content) != 0 || a.Usage.Input != 8 {
		t.Errorf("got %+v", a)
	}
}
