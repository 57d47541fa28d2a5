package chat

import (
	"errors"
	"testing"
)

// TestErrorStatus: an error of each status as each API writes it, and
// the status it reads as: in a stream event, where no HTTP status goes
// with it, the API's own type alone says it.
func TestErrorStatus(t *testing.T) {
	tests := []struct {
		status int
		want   map[string]string // the body, or Bedrock's exception name
		back   map[string]int    // the status read back from an event
	}{
		{400, map[string]string{
			"openai":    `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`,
			"anthropic": `{"type":"error","error":{"type":"invalid_request_error","message":"m"}}`,
			"gemini":    `{"error":{"code":400,"message":"m","status":"INVALID_ARGUMENT"}}`,
			"bedrock":   "validationException",
		}, map[string]int{"openai": 400, "anthropic": 400, "gemini": 400, "bedrock": 400}},
		{429, map[string]string{
			"openai":    `{"error":{"message":"m","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			"anthropic": `{"type":"error","error":{"type":"rate_limit_error","message":"m"}}`,
			"gemini":    `{"error":{"code":429,"message":"m","status":"RESOURCE_EXHAUSTED"}}`,
			"bedrock":   "throttlingException",
		}, map[string]int{"openai": 429, "anthropic": 429, "gemini": 429, "bedrock": 429}},
		{500, map[string]string{
			"openai":    `{"error":{"message":"m","type":"server_error","param":null,"code":null}}`,
			"anthropic": `{"type":"error","error":{"type":"api_error","message":"m"}}`,
			"gemini":    `{"error":{"code":500,"message":"m","status":"INTERNAL"}}`,
			"bedrock":   "internalServerException",
		}, map[string]int{"openai": 500, "anthropic": 500, "gemini": 500, "bedrock": 500}},
		{502, map[string]string{ // a cut stream
			"openai":    `{"error":{"message":"m","type":"server_error","param":null,"code":null}}`,
			"anthropic": `{"type":"error","error":{"type":"api_error","message":"m"}}`,
			"gemini":    `{"error":{"code":502,"message":"m","status":"INTERNAL"}}`,
			"bedrock":   "modelStreamErrorException",
		}, map[string]int{"openai": 500, "anthropic": 500, "gemini": 502, "bedrock": 500}},
		{503, map[string]string{
			"openai":    `{"error":{"message":"m","type":"server_error","param":null,"code":null}}`,
			"anthropic": `{"type":"error","error":{"type":"overloaded_error","message":"m"}}`,
			"gemini":    `{"error":{"code":503,"message":"m","status":"UNAVAILABLE"}}`,
			"bedrock":   "serviceUnavailableException",
		}, map[string]int{"openai": 500, "anthropic": 529, "gemini": 503, "bedrock": 503}},
		{529, map[string]string{
			"openai":    `{"error":{"message":"m","type":"server_error","param":null,"code":"overloaded"}}`,
			"anthropic": `{"type":"error","error":{"type":"overloaded_error","message":"m"}}`,
			"gemini":    `{"error":{"code":503,"message":"m","status":"UNAVAILABLE"}}`,
			"bedrock":   "serviceUnavailableException",
		}, map[string]int{"openai": 529, "anthropic": 529, "gemini": 503, "bedrock": 503}},
		{504, map[string]string{
			"openai":    `{"error":{"message":"m","type":"server_error","param":null,"code":"timeout"}}`,
			"anthropic": `{"type":"error","error":{"type":"timeout_error","message":"m"}}`,
			"gemini":    `{"error":{"code":504,"message":"m","status":"DEADLINE_EXCEEDED"}}`,
			"bedrock":   "modelStreamErrorException",
		}, map[string]int{"openai": 500, "anthropic": 504, "gemini": 504, "bedrock": 500}},
	}
	for _, tt := range tests {
		e := &Error{Status: tt.status, Message: "m"}
		for _, name := range codecNames {
			if name == "bedrock" {
				if got := exceptionName(tt.status); got != tt.want[name] {
					t.Errorf("%d bedrock: %s, want %s", tt.status, got, tt.want[name])
				}
				if got := BedrockErrorType(tt.status); got == "" {
					t.Errorf("%d bedrock: no error type", tt.status)
				}
				if got := errorStatusVia(name, tt.status); got != tt.back[name] {
					t.Errorf("%d bedrock: reads back as %d, want %d", tt.status, got, tt.back[name])
				}
				continue
			}
			body := codecs[name].EncodeError(e)
			checkJSON(t, name, body, tt.want[name])
			if got := codecs[name].DecodeError(0, body).Status; got != tt.back[name] {
				t.Errorf("%d %s: reads back as %d, want %d", tt.status, name, got, tt.back[name])
			}
			if got := codecs[name].DecodeError(tt.status, body); got.Status != tt.status || got.Message != "m" {
				t.Errorf("%d %s: with its status, reads back as %+v", tt.status, name, got)
			}
		}
	}
}

// TestErrorsName: the errors say what and for which API, and are
// told apart by errors.Is.
func TestErrorsName(t *testing.T) {
	err := cannot("Gemini", "tool_choice %s", "none")
	var ue *UnsupportedError
	if !errors.As(err, &ue) || ue.Dialect != "Gemini" || err.Error() != "chat: Gemini cannot take tool_choice none" {
		t.Errorf("%v", err)
	}
	if !errors.Is(err, ErrUnsupported) || errors.Is(err, ErrMalformed) {
		t.Errorf("%v: Is", err)
	}
	err = notInModel("OpenAI", "message role %q", "function")
	if err.Error() != `chat: OpenAI message role "function" is not in the chat model` {
		t.Errorf("%v", err)
	}
	_, err = OpenAI.DecodeRequest([]byte(`{"model":"m","model":"n"}`))
	if !errors.Is(err, ErrMalformed) || err.Error() != `chat: malformed OpenAI request: member "model" given twice` {
		t.Errorf("%v", err)
	}
}

// TestFeatures: what a request asks that a capability check must look
// for.
func TestFeatures(t *testing.T) {
	r, err := OpenAI.DecodeRequest([]byte(`{"model":"m","n":2,"logprobs":true,"top_logprobs":2,
		"messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"https://x/y.png"}},
			{"type":"input_audio","input_audio":{"data":"AAA=","format":"wav"}}]}],
		"tools":[{"type":"web_search_preview"},{"type":"function","function":{"name":"f"}}],
		"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}},
		"reasoning_effort":"high","user":"u","store":true}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Feature{FeatureTools, FeatureImages, FeatureJSONSchema, FeatureChoices, FeatureLogprobs, FeatureAudio,
		FeatureBuiltinTool, FeatureThinking, FeatureOther}
	checkModel(t, "features", r.Features(), want)
	var advisory []string
	for _, e := range r.Extras {
		if e.Advisory {
			advisory = append(advisory, e.Name)
		}
	}
	checkModel(t, "advisory", advisory, []string{"store"})

	r, err = Anthropic.DecodeRequest([]byte(`{"model":"m","max_tokens":5,"thinking":{"type":"enabled","budget_tokens":1024},
		"tools":[{"type":"web_search_20250305","name":"web_search"}],
		"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"yo"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	checkModel(t, "anthropic features", r.Features(), []Feature{FeatureBuiltinTool, FeatureThinking})
	_, err = OpenAI.EncodeRequest(r)
	checkErr(t, "anthropic's thinking block to openai", err, "OpenAI cannot take Anthropic's thinking block in an assistant message")
	if b, err := Anthropic.EncodeRequest(r); err != nil || !jsonEqual(b, []byte(`{"model":"m","max_tokens":5,"messages":[
		{"role":"user","content":[{"type":"text","text":"hi"}]},
		{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"yo"}]}],
		"tools":[{"type":"web_search_20250305","name":"web_search"}],"thinking":{"type":"enabled","budget_tokens":1024}}`)) {
		t.Errorf("anthropic's thinking block back to anthropic: %s, %v", b, err)
	}
	r.Messages[1].Parts = r.Messages[1].Parts[1:]
	thinking, tool := r.Extras[0], r.Extras[1]
	r.Extras = []Extra{tool}
	_, err = OpenAI.EncodeRequest(r)
	checkErr(t, "anthropic's built-in tool to openai", err, "OpenAI cannot take Anthropic's built-in tool web_search_20250305")
	r.Extras = []Extra{thinking}
	_, err = Gemini.EncodeRequest(r)
	checkErr(t, "anthropic's thinking to gemini", err, "Gemini cannot take Anthropic's thinking")
}
