package fake

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/dialect/chat"
)

// Each API's rules, one broken at a time: a body the provider takes, and
// the same body with one rule broken, which the strict fake refuses
// naming what is wrong.
func TestStrictRules(t *testing.T) {
	const (
		oaTools = `"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
		anTools = `"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]`
		gmTools = `"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"object"}}]}]`
		brTools = `"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object"}}}}]}`
	)
	oaTurns := `{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"18C"}`
	anTurns := `{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"get_weather","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"18C"}]}`
	gmTurns := `{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"r":"18C"}}}]}`
	brTurns := `{"role":"user","content":[{"text":"hi"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"get_weather","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"18C"}]}}]}`
	for _, tt := range []struct {
		name string
		d    dialect
		body string
		want string // "" when the body is good
	}{
		{"openai/good", openAI{}, `{"model":"m",` + oaTools + `,"tool_choice":{"type":"function","function":{"name":"get_weather"}},"messages":[` + oaTurns + `]}`, ""},
		{"openai/no model", openAI{}, `{"messages":[{"role":"user","content":"hi"}]}`, "model"},
		{"openai/bad role", openAI{}, `{"model":"m","messages":[{"role":"model","content":"hi"}]}`, "Supported values"},
		{"openai/tool without call", openAI{}, `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"tool","tool_call_id":"c9","content":"x"}]}`, "preceeding message with 'tool_calls'"},
		{"openai/call without tool message", openAI{}, `{"model":"m",` + oaTools + `,"messages":[` + strings.TrimSuffix(oaTurns, `,{"role":"tool","tool_call_id":"c1","content":"18C"}`) + `,{"role":"user","content":"and?"}]}`, "did not have response messages: c1"},
		{"openai/tool_choice unknown", openAI{}, `{"model":"m",` + oaTools + `,"tool_choice":{"type":"function","function":{"name":"x"}},"messages":[{"role":"user","content":"hi"}]}`, "tool_choice"},
		{"openai/schema without name", openAI{}, `{"model":"m","response_format":{"type":"json_schema","json_schema":{"schema":{}}},"messages":[{"role":"user","content":"hi"}]}`, "json_schema.name"},

		{"anthropic/good", anthropic{}, `{"model":"m","max_tokens":9,"system":"be brief",` + anTools + `,"tool_choice":{"type":"tool","name":"get_weather"},"messages":[` + anTurns + `]}`, ""},
		{"anthropic/no max_tokens", anthropic{}, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Field required"},
		{"anthropic/system message", anthropic{}, `{"model":"m","max_tokens":9,"messages":[{"role":"system","content":"x"},{"role":"user","content":"hi"}]}`, "system"},
		{"anthropic/two user turns", anthropic{}, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"},{"role":"user","content":"again"}]}`, "alternate"},
		{"anthropic/result of no use", anthropic{}, `{"model":"m","max_tokens":9,` + anTools + `,"messages":[` + strings.Replace(anTurns, `"tool_use_id":"c1"`, `"tool_use_id":"c2"`, 1) + `]}`, "unexpected `tool_use_id`"},
		{"anthropic/use without result", anthropic{}, `{"model":"m","max_tokens":9,` + anTools + `,"messages":[` + strings.Replace(anTurns, `{"type":"tool_result","tool_use_id":"c1","content":"18C"}`, `{"type":"text","text":"and?"}`, 1) + `]}`, "without `tool_result`"},
		{"anthropic/unknown block", anthropic{}, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"input_text","text":"hi"}]}]}`, "unknown content block type"},
		{"anthropic/image of a bad type", anthropic{}, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/bmp","data":"AA=="}}]}]}`, "media_type"},
		{"anthropic/empty text", anthropic{}, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "non-empty"},
		{"vertex anthropic/good without model", vertexAnthropic{}, `{"anthropic_version":"vertex-2023-10-16","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, ""},
		{"vertex anthropic/model in the body", vertexAnthropic{}, `{"anthropic_version":"vertex-2023-10-16","model":"claude-haiku-4-5","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "model: Extra inputs are not permitted"},
		{"vertex anthropic/no anthropic_version", vertexAnthropic{}, `{"max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "anthropic_version: Field required"},
		{"vertex anthropic/the API's version", vertexAnthropic{}, `{"anthropic_version":"2023-06-01","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "anthropic_version: Input should be 'vertex-2023-10-16'"},
		{"vertex anthropic/Anthropic's rules too", vertexAnthropic{}, `{"anthropic_version":"vertex-2023-10-16","messages":[{"role":"user","content":"hi"}]}`, "max_tokens: Field required"},

		{"gemini/good", gemini{method: "generateContent"}, `{` + gmTools + `,"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}},"contents":[` + gmTurns + `]}`, ""},
		{"gemini/unknown member", gemini{method: "generateContent"}, `{"messages":[],"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, `Unknown name "messages"`},
		{"gemini/assistant role", gemini{method: "generateContent"}, `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"assistant","parts":[{"text":"x"}]}]}`, "valid role"},
		{"gemini/no parts", gemini{method: "generateContent"}, `{"contents":[{"role":"user","parts":[]}]}`, "parts must not be empty"},
		{"gemini/response without call", gemini{method: "generateContent"}, `{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{}}}]}]}`, "function response turn"},
		{"gemini/call after model", gemini{method: "generateContent"}, `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]}]}`, "function call turn"},
		{"gemini/fewer responses", gemini{method: "generateContent"}, `{"contents":[` + strings.Replace(gmTurns, `{"functionCall":{"name":"get_weather","args":{}}}`, `{"functionCall":{"name":"get_weather","args":{}}},{"functionCall":{"name":"get_weather","args":{"x":1}}}`, 1) + `]}`, "number of function response parts"},
		{"gemini/bare tool", gemini{method: "generateContent"}, `{"tools":[{"name":"get_weather"}],"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "tools[0]"},
		{"gemini/schema without mime", gemini{method: "generateContent"}, `{"generationConfig":{"responseSchema":{"type":"OBJECT"}},"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, "response_mime_type"},

		{"bedrock/good", converse{}, `{` + brTools + `,"messages":[` + brTurns + `]}`, ""},
		{"bedrock/no toolConfig", converse{}, `{"messages":[` + brTurns + `]}`, "toolConfig field must be defined"},
		{"bedrock/assistant first", converse{}, `{"messages":[{"role":"assistant","content":[{"text":"x"}]}]}`, "start with a user message"},
		{"bedrock/not alternating", converse{}, `{"messages":[{"role":"user","content":[{"text":"x"}]},{"role":"user","content":[{"text":"y"}]}]}`, "alternate"},
		{"bedrock/result of no use", converse{}, `{` + brTools + `,"messages":[` + strings.Replace(brTurns, `"toolResult":{"toolUseId":"c1"`, `"toolResult":{"toolUseId":"c2"`, 1) + `]}`, "matches no toolUse"},
		{"bedrock/empty result", converse{}, `{` + brTools + `,"messages":[` + strings.Replace(brTurns, `[{"text":"18C"}]`, `[]`, 1) + `]}`, "cannot be empty"},
		{"bedrock/blank result", converse{}, `{` + brTools + `,"messages":[` + strings.Replace(brTurns, `[{"text":"18C"}]`, `[{"text":" "}]`, 1) + `]}`, "is blank"},
		{"bedrock/tool without toolSpec", converse{}, `{"toolConfig":{"tools":[{"name":"get_weather"}]},"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "tools[0]"},
		{"bedrock/schema not json", converse{}, `{"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"type":"object"}}}]},"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "inputSchema"},
		{"bedrock/image of a bad format", converse{}, `{"messages":[{"role":"user","content":[{"image":{"format":"image/png","source":{"bytes":"AA=="}}}]}]}`, "image.format"},
		{"gemini/image without data", gemini{method: "generateContent"}, `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png"}}]}]}`, "mime_type and data"},
		{"bedrock/unknown block", converse{}, `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`, "unknown member"},
		{"bedrock/inference member", converse{}, `{"inferenceConfig":{"max_tokens":5},"messages":[{"role":"user","content":[{"text":"hi"}]}]}`, "max_tokens"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := validate(tt.d, []byte(tt.body))
			if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
				t.Errorf("validate = %q, want %q", got, tt.want)
			}
		})
	}
}

// A strict Provider answers a request its API refuses with the API's
// 400, counts the call and plays no step; a lenient one takes it.
func TestStrictRefuses(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	s.Provider.Strict = true
	resp := post(t, s, "/v1/messages", "", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	b := readAll(t, resp)
	var e anthropicErr
	if resp.StatusCode != 400 || json.Unmarshal(b, &e) != nil || e.Error.Type != "invalid_request_error" ||
		!strings.Contains(e.Error.Message, "max_tokens") {
		t.Errorf("status %d: %s; want Anthropic's 400 naming max_tokens", resp.StatusCode, b)
	}
	resp = post(t, s, "/v1/chat/completions", "", `{"model":"m","messages":[]}`)
	if b := readAll(t, resp); resp.StatusCode != 400 || !strings.Contains(string(b), `"invalid_request_error"`) {
		t.Errorf("status %d: %s; want OpenAI's 400", resp.StatusCode, b)
	}
	if s.Calls() != 2 || len(s.Played()) != 0 {
		t.Errorf("calls %d, played %v; want 2 counted, none played", s.Calls(), s.Played())
	}
	s.Provider.Strict = false
	if resp := post(t, s, "/v1/chat/completions", "", `{"model":"m","messages":[]}`); resp.StatusCode != 200 {
		t.Errorf("lenient: status %d, want 200", resp.StatusCode)
	}
}

// chatAnswer is an answer with every kind of block and each usage count.
func chatAnswer() chat.Answer {
	return chat.Answer{ID: "a1", Model: "m1", Created: 1700000000,
		Content: []chat.Part{chat.Text("Hello there."),
			{Type: chat.PartToolCall, ToolCall: &chat.ToolCall{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris","days":3}`)}},
			{Type: chat.PartToolCall, ToolCall: &chat.ToolCall{ID: "call_2", Name: "get_time", Args: json.RawMessage(`{"tz":"CET"}`)}}},
		Stop: chat.StopToolUse, Usage: chat.Usage{Input: 10, Output: 7, CacheRead: 30, CacheWrite: 5}}
}

// The scripted chat answer, whole and streamed, reads back through each
// API's codec as itself (what the API can say of it: Gemini's made-up
// ids, the cache writes OpenAI and Gemini do not count), its streamed
// arguments in pieces.
func TestChatAnswer(t *testing.T) {
	for _, tt := range []struct {
		name  string
		d     dialect
		codec chat.Codec
	}{
		{"openai", openAI{}, chat.OpenAI},
		{"anthropic", anthropic{}, chat.Anthropic},
		{"gemini", gemini{method: "generateContent"}, chat.Gemini},
		{"bedrock", converse{bedrock{}}, chat.Bedrock},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := chatAnswer()
			c := newChatReply(&a, tt.d, reply{id: "x", model: "m", usage: true}, false)
			want := chatAnswer()
			if tt.codec == chat.OpenAI || tt.codec == chat.Gemini {
				want.Usage.Input += want.Usage.CacheWrite
				want.Usage.CacheWrite = 0
			}
			check := func(got *chat.Answer) {
				t.Helper()
				if tt.codec == chat.Gemini {
					for i := 1; i < 3; i++ {
						got.Content[i].ToolCall.ID = want.Content[i].ToolCall.ID
					}
				}
				if !reflect.DeepEqual(got.Content, want.Content) || got.Stop != want.Stop || got.Usage != want.Usage {
					t.Errorf("got %+v\nwant %+v", got, want)
				}
			}
			whole, err := tt.codec.DecodeAnswer(c.body())
			if err != nil {
				t.Fatalf("%v: %s", err, c.body())
			}
			check(whole)
			dec := tt.codec.NewStreamDecoder()
			var col chat.Collector
			args := 0
			for _, ev := range c.events() {
				evs, err := dec.Decode(nil, chat.Frame{Event: ev.name, Data: ev.data})
				if err != nil {
					t.Fatalf("%v: %s", err, ev.data)
				}
				for _, e := range evs {
					if e.Type == chat.EventToolArgs && e.Index == 1 {
						args++
					}
					col.Add(e)
				}
			}
			streamed, e := col.Answer()
			if e != nil || !col.Done() {
				t.Fatalf("stream ended with %v, done %v", e, col.Done())
			}
			check(streamed)
			if tt.codec != chat.Gemini && args != argPieces {
				t.Errorf("arguments in %d events, want %d", args, argPieces)
			}
		})
	}
}

// Through the server, a scripted chat answer is what a chat endpoint
// answers; the Responses API keeps the fake's text.
func TestChatAnswerServed(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	a := chatAnswer()
	s.Provider.Chat = &a
	resp := post(t, s, "/v1/messages", "", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`)
	got, err := chat.Anthropic.DecodeAnswer(readAll(t, resp))
	if err != nil || len(got.Content) != 3 || got.Content[2].ToolCall.Name != "get_time" || got.ID != "a1" {
		t.Errorf("answer %+v (%v)", got, err)
	}
	resp = post(t, s, "/v1/responses", "", `{"model":"m","input":"hi"}`)
	if b := readAll(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "fake answer") {
		t.Errorf("responses: %d %s", resp.StatusCode, b)
	}
}

// A tool that returned nothing, or only blanks, is translated for
// Bedrock as a text Converse takes (chat.NoToolOutput): the strict
// Converse refuses neither an empty content nor a blank text.
func TestEmptyToolResultForConverse(t *testing.T) {
	for _, out := range []string{`""`, `"\n "`, `[]`} {
		body := `{"model":"m","tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"messages":[` +
			`{"role":"user","content":"hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":` + out + `}]}`
		r, err := chat.OpenAI.DecodeRequest([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		b, err := chat.Bedrock.EncodeRequest(r)
		if err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		if err := checkConverse(b); err != nil || !strings.Contains(string(b), `"content":[{"text":"`+chat.NoToolOutput+`"}]`) {
			t.Errorf("tool output %s written as %s: %v", out, b, err)
		}
	}
}
