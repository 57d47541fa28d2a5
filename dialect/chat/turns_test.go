package chat

import (
	"encoding/json"
	"testing"
)

// TestTurns: the APIs that take one turn per role (Anthropic, Gemini,
// Bedrock) are given a valid conversation, or an error naming what makes
// it invalid, never one the provider would refuse.
func TestTurns(t *testing.T) {
	ask := user(Text("Weather?"))
	calls := assistant(call("c1", "get_weather", `{"city":"Oslo"}`), call("c2", "get_weather", `{"city":"Bergen"}`))
	tests := []struct {
		name string
		msgs []Message
		want string // Anthropic's messages, or "error: …"
	}{
		{"results first, messages of one role merged",
			[]Message{ask, calls, user(Text("Here:"), result("c2", false, "rain")), user(result("c1", false, "snow"))},
			`[{"role":"user","content":[{"type":"text","text":"Weather?"}]},
			{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"get_weather","input":{"city":"Oslo"}},
				{"type":"tool_use","id":"c2","name":"get_weather","input":{"city":"Bergen"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"c2","content":"rain"},
				{"type":"tool_result","tool_use_id":"c1","content":"snow"},{"type":"text","text":"Here:"}]}]`},
		{"empty text left out",
			[]Message{user(Text(""), Text("Hi")), assistant(Text(""), Text("Hello"))},
			`[{"role":"user","content":[{"type":"text","text":"Hi"}]},{"role":"assistant","content":[{"type":"text","text":"Hello"}]}]`},
		{"a result that answers no call of the turn before",
			[]Message{ask, calls, user(result("c1", false, "snow"), result("c2", false, "rain")), assistant(Text("ok")),
				user(result("c1", false, "again"))},
			"error: tool result \"c1\", which answers no tool call of the turn before"},
		{"a call without its result",
			[]Message{ask, calls, user(result("c1", false, "snow"))},
			"error: tool call \"c2\" without its result in the next turn"},
		{"an empty message",
			[]Message{ask, assistant(Text(""))},
			"error: an empty assistant message"},
		{"a result in the assistant's turn",
			[]Message{ask, assistant(result("c1", false, "x"))},
			"error: a tool result in an assistant message"},
		{"a call id Anthropic refuses",
			[]Message{ask, assistant(call("call 1", "f", `{}`)), user(result("call 1", false, "x"))},
			"error: tool call id \"call 1\" (only letters, digits, _ and -)"},
		{"arguments that are no object",
			[]Message{ask, assistant(call("c1", "f", `[1]`)), user(result("c1", false, "x"))},
			"error: the arguments of tool call \"c1\", which are not a JSON object"},
	}
	for _, tt := range tests {
		b, err := Anthropic.EncodeRequest(&Request{MaxTokens: 1, Messages: tt.msgs})
		if msg, isErr := isErrWant(tt.want); isErr {
			checkErr(t, tt.name, err, msg)
			for _, c := range []Codec{Gemini, Bedrock} { // the same rules, the same words
				_, err := c.EncodeRequest(&Request{MaxTokens: 1, Messages: tt.msgs, Tools: []Tool{weatherTool}})
				if tt.name != "a call id Anthropic refuses" || c == Bedrock {
					checkErr(t, tt.name+" "+c.Name(), err, msg)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var got struct {
			Messages json.RawMessage `json:"messages"`
		}
		json.Unmarshal(b, &got)
		checkJSON(t, tt.name, got.Messages, tt.want)
	}
}
