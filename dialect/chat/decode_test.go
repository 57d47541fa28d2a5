package chat

import (
	"encoding/json"
	"testing"
)

// TestGeminiRequest: what Gemini's requests carry beyond the shared
// cases: OpenAPI schemas read as JSON schemas, ids Vertex AI gives kept,
// function responses tied to calls by name and order, a snake_case
// member an extra.
func TestGeminiRequest(t *testing.T) {
	r, err := Gemini.DecodeRequest([]byte(`{
		"contents":[{"role":"user","parts":[{"text":"Weather and time in Oslo?"}]},
			{"role":"model","parts":[{"functionCall":{"name":"get_time","args":{"tz":"Europe/Oslo"}}},
				{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}},"thoughtSignature":"sig1"},
				{"functionCall":{"id":"v-7","name":"get_weather","args":{"city":"Bergen"}}}]},
			{"role":"user","parts":[{"functionResponse":{"id":"v-7","name":"get_weather","response":{"temp_c":9}}},
				{"functionResponse":{"name":"get_weather","response":{"temp_c":4}}},
				{"functionResponse":{"name":"get_time","response":{"output":"10:00"}}}]}],
		"tools":[{"functionDeclarations":[{"name":"get_weather","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"}}}}]},
			{"googleSearch":{}}],
		"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"ARRAY","items":{"type":"STRING"}}},
		"safety_settings":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Request{
		Messages: []Message{
			user(Text("Weather and time in Oslo?")),
			assistant(call("call_0", "get_time", `{"tz":"Europe/Oslo"}`),
				Part{Type: PartToolCall, ToolCall: &ToolCall{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Oslo"}`)}, Signature: "sig1"},
				call("v-7", "get_weather", `{"city":"Bergen"}`)),
			user(result("v-7", false, `{"temp_c":9}`), result("call_1", false, `{"temp_c":4}`), result("call_0", false, `{"output":"10:00"}`)),
		},
		Tools:  []Tool{{Name: "get_weather", Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)}},
		Format: &Format{Type: FormatJSONSchema, Schema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`)},
		Extras: []Extra{
			{Feature: FeatureBuiltinTool, Dialect: "gemini", Name: "googleSearch", Value: json.RawMessage(`{"googleSearch":{}}`)},
			{Feature: FeatureOther, Dialect: "gemini", Name: "safety_settings", Value: json.RawMessage(`[]`)},
		},
	}
	checkModel(t, "decoded", r, want)
	_, err = Gemini.DecodeRequest([]byte(`{"contents":[{"role":"user","parts":[{"functionResponse":{"name":"f","response":{}}}]}]}`))
	checkErr(t, "an orphan response", err, `functionResponse "f" answers no functionCall of the turn before`)

	// Written for Anthropic: Gemini's built-in tool cannot go.
	_, err = Anthropic.EncodeRequest(&Request{MaxTokens: 1, Messages: r.Messages, Tools: r.Tools, Extras: r.Extras})
	checkErr(t, "to anthropic", err, "Anthropic cannot take Gemini's built-in tool googleSearch")
	b, err := Anthropic.EncodeRequest(&Request{MaxTokens: 1, Messages: r.Messages, Tools: r.Tools})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages json.RawMessage `json:"messages"`
	}
	json.Unmarshal(b, &got)
	checkJSON(t, "to anthropic", got.Messages, `[{"role":"user","content":[{"type":"text","text":"Weather and time in Oslo?"}]},
		{"role":"assistant","content":[{"type":"tool_use","id":"call_0","name":"get_time","input":{"tz":"Europe/Oslo"}},
			{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Oslo"}},
			{"type":"tool_use","id":"v-7","name":"get_weather","input":{"city":"Bergen"}}]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"v-7","content":"{\"temp_c\":9}"},
			{"type":"tool_result","tool_use_id":"call_1","content":"{\"temp_c\":4}"},
			{"type":"tool_result","tool_use_id":"call_0","content":"{\"output\":\"10:00\"}"}]}]`)
}

// TestBedrockToolResultContent: a toolResult's json block is read as the
// text of its JSON, an image as an image, a document as what the model
// does not carry.
func TestBedrockToolResultContent(t *testing.T) {
	r, err := Bedrock.DecodeRequest([]byte(`{"messages":[{"role":"user","content":[{"text":"go"}]},
		{"role":"assistant","content":[{"toolUse":{"toolUseId":"t1","name":"f","input":{}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"json":{"a": 1}},{"image":{"format":"jpeg","source":{"bytes":"/9j/"}}}]}}]}],
		"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object"}}}}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := r.Messages[2].Parts[0].ToolResult.Content
	checkModel(t, "content", got, []Part{Text(`{"a":1}`), {Type: PartImage, Image: &Image{MediaType: "image/jpeg", Data: "/9j/"}}})
	_, err = OpenAI.EncodeRequest(r)
	checkErr(t, "to openai", err, "OpenAI cannot take an image part in a tool result")

	r, err = Bedrock.DecodeRequest([]byte(`{"messages":[{"role":"user","content":[{"document":{"format":"pdf","name":"x","source":{"bytes":"JVBER"}}}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Anthropic.EncodeRequest(&Request{MaxTokens: 1, Messages: r.Messages})
	checkErr(t, "a document to anthropic", err, "Anthropic cannot take Bedrock's document block")
}

// TestNestedExtras: a member the model does not carry, inside one it
// partly does, is written back beside what the model carries there, and
// refused by another API.
func TestNestedExtras(t *testing.T) {
	tests := []struct {
		codec Codec
		body  string
	}{
		{OpenAI, `{"model":"m","messages":[{"role":"user","content":"Hi"}],"stream":true,
			"stream_options":{"include_usage":true,"include_obfuscation":false}}`},
		{Anthropic, `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],
			"metadata":{"user_id":"u","tier":"gold"},"output_config":{"format":{"type":"json_schema","schema":{"type":"object"}},"effort":"low"}}`},
		{Gemini, `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],
			"generationConfig":{"maxOutputTokens":5,"thinkingConfig":{"thinkingBudget":0}}}`},
	}
	for _, tt := range tests {
		r, err := tt.codec.DecodeRequest([]byte(tt.body))
		if err != nil {
			t.Fatalf("%s: %v", tt.codec.Name(), err)
		}
		b, err := tt.codec.EncodeRequest(r)
		if err != nil {
			t.Fatalf("%s: %v", tt.codec.Name(), err)
		}
		checkJSON(t, tt.codec.Name(), b, tt.body)
		other := Bedrock
		if tt.codec == Bedrock {
			other = OpenAI
		}
		_, err = other.EncodeRequest(r)
		if err == nil {
			t.Errorf("%s: %s took the nested extra", tt.codec.Name(), other.Name())
		}
	}
	r, _ := Anthropic.DecodeRequest([]byte(tests[1].body))
	_, err := Bedrock.EncodeRequest(&Request{Messages: r.Messages, Extras: r.Extras[1:]})
	checkErr(t, "effort", err, "Bedrock cannot take Anthropic's output_config.effort")
}
