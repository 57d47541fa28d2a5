package fake

import (
	"encoding/json"
	"strings"
)

// A final assistant message is a prefill in Anthropic's Messages API (on
// Anthropic, Vertex AI and Bedrock's InvokeModel) and in Bedrock's
// Converse: the answer continues that text, without repeating it. The
// fake's own text answer does the same: when the prefill is a beginning
// of the text it would answer, it answers the rest, the piece the prefill
// ends in cut where it ends; any other prefill gets the whole text, as a
// model answers something of its own. A scripted chat answer
// (Provider.Chat) is answered as scripted.

// prefiller is a dialect whose API continues a final assistant message.
type prefiller interface{ prefills() }

func (anthropic) prefills() {}
func (converse) prefills()  {}
func (invoke) prefills()    {}

// prefill returns the text of a request's final message when it is the
// assistant's, in the Messages shape (content a string or text blocks) or
// Converse's (content blocks with text); "" when the last message is not
// the assistant's or holds no text.
func prefill(body []byte) string {
	var in struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &in) != nil || len(in.Messages) == 0 {
		return ""
	}
	last := in.Messages[len(in.Messages)-1]
	if last.Role != "assistant" {
		return ""
	}
	var s string
	if json.Unmarshal(last.Content, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(last.Content, &blocks)
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// continued returns the pieces of the answer that follow prefix, when
// the answer's text begins with it: the piece it ends inside cut there,
// the pieces before it dropped. Other prefixes leave chunks as they are.
func continued(chunks []string, prefix string) []string {
	if prefix == "" || !strings.HasPrefix(strings.Join(chunks, ""), prefix) {
		return chunks
	}
	for i, c := range chunks {
		if len(prefix) < len(c) {
			return append([]string{c[len(prefix):]}, chunks[i+1:]...)
		}
		prefix = prefix[len(c):]
	}
	return nil
}
