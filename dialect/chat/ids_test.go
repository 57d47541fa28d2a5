package chat

import "testing"

// An answer's id takes the client's API's form, its body kept; one that
// has none takes the fallback's.
func TestAnswerID(t *testing.T) {
	for _, tt := range []struct {
		client             Codec
		id, fallback, want string
	}{
		{OpenAI, "msg_01AbC", "r1", "chatcmpl-01AbC"},
		{OpenAI, "resp-9", "r1", "chatcmpl-resp-9"},
		{OpenAI, "", "req 7/x", "chatcmpl-req7x"},
		{Anthropic, "chatcmpl-XY", "r1", "msg_XY"},
		{Anthropic, "", "r1", "msg_r1"},
		{Gemini, "msg_01", "r1", "01"},
		{Anthropic, "msg_keep", "r1", "msg_keep"},
		{Bedrock, "msg_01", "r1", ""},
		{OpenAI, "", "", ""},
	} {
		if got := AnswerID(tt.client, tt.id, tt.fallback); got != tt.want {
			t.Errorf("AnswerID(%s, %q, %q) = %q, want %q", tt.client.Name(), tt.id, tt.fallback, got, tt.want)
		}
	}
}
