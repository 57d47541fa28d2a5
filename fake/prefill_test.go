package fake

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// A Messages request whose last message is the assistant's is answered
// with the rest of the text, whole or streamed: the prefix is not said
// again, the piece it ends inside is cut where it ends, and the usage
// counts only what was answered. A prefix the answer does not begin with
// gets the whole text; OpenAI answers after a final assistant message,
// so it repeats nothing it is given.
func TestPrefillContinues(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	req := func(stream bool, prefix string) string {
		b, _ := json.Marshal(map[string]any{"model": "claude-test", "max_tokens": 64, "stream": stream,
			"messages": []any{
				map[string]any{"role": "user", "content": "hi"},
				map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": prefix}}},
			}})
		return string(b)
	}
	for _, c := range []struct {
		prefix, want string
		tokens       int
	}{
		{"This is a", " fake answer.", 2},
		{"This is a fa", "ke answer.", 2},
		{"This is a fake answer.", "", 0},
		{"Something else", "This is a fake answer.", 5},
	} {
		var got struct {
			Content []struct{ Text string } `json:"content"`
			Usage   struct {
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		}
		decode(t, readAll(t, post(t, s, messagesPath, "", req(false, c.prefix))), &got)
		text := ""
		if len(got.Content) > 0 {
			text = got.Content[0].Text
		}
		if text != c.want || got.Usage.OutputTokens != c.tokens {
			t.Errorf("prefix %q: answered %q in %d tokens, want %q in %d", c.prefix, text, got.Usage.OutputTokens, c.want, c.tokens)
		}
		var streamed strings.Builder
		for _, ev := range streamOf(t, post(t, s, messagesPath, "", req(true, c.prefix))) {
			var e struct {
				Delta struct{ Text string } `json:"delta"`
			}
			if ev.name == "content_block_delta" {
				decode(t, []byte(ev.data), &e)
				streamed.WriteString(e.Delta.Text)
			}
		}
		if streamed.String() != c.want {
			t.Errorf("prefix %q: streamed %q, want %q", c.prefix, streamed.String(), c.want)
		}
	}
	body := `{"model":"gpt-test","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"This is a"}]}`
	var o struct {
		Choices []struct{ Message struct{ Content string } } `json:"choices"`
	}
	decode(t, readAll(t, post(t, s, "/v1/chat/completions", "", body)), &o)
	if len(o.Choices) != 1 || o.Choices[0].Message.Content != "This is a fake answer." {
		t.Errorf("OpenAI answered %+v, want the whole text", o.Choices)
	}
}

// The prefill's text is read from Anthropic's content (a string or text
// blocks) and Converse's (blocks with text); a last message that is not
// the assistant's is none.
func TestPrefillRead(t *testing.T) {
	for body, want := range map[string]string{
		`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"A b"}]}`:                       "A b",
		`{"messages":[{"role":"assistant","content":[{"type":"text","text":"A "},{"type":"text","text":"b"}]}]}`:  "A b",
		`{"messages":[{"role":"user","content":[{"text":"q"}]},{"role":"assistant","content":[{"text":"A b"}]}]}`: "A b",
		`{"messages":[{"role":"assistant","content":"A"},{"role":"user","content":"q"}]}`:                         "",
		`{"messages":[]}`: "",
		`not json`:        "",
	} {
		if got := prefill([]byte(body)); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
	if got := continued([]string{"A", " b", " c"}, "A b"); !slices.Equal(got, []string{" c"}) {
		t.Errorf("continued: %q", got)
	}
}
