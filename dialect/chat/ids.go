package chat

import "strings"

// idPrefixes are the prefixes the APIs give their answers' ids: OpenAI's
// chatcmpl-, Anthropic's msg_ (Gemini's responseId has none, Bedrock
// gives no id).
var idPrefixes = map[string]string{openAIName: "chatcmpl-", anthropicName: "msg_", geminiName: ""}

// AnswerID returns the id of an answer another API gave with id, in the
// form client's API gives its own: OpenAI's chatcmpl-…, Anthropic's
// msg_…, Gemini's bare id; "" for Bedrock, whose answers carry none. The
// id's body is kept, another API's prefix cut; an answer that gave none
// (Bedrock's) takes fallback's, cut to letters, digits, _ and -, so that
// a client never reads an empty id or another API's.
func AnswerID(client Codec, id, fallback string) string {
	prefix, ok := idPrefixes[client.Name()]
	if !ok {
		return ""
	}
	body := id
	for _, p := range idPrefixes {
		if p != "" && strings.HasPrefix(body, p) {
			body = body[len(p):]
			break
		}
	}
	if body == "" {
		body = strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
				return r
			}
			return -1
		}, fallback)
	}
	if body == "" {
		return ""
	}
	return prefix + body
}
