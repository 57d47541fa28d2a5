package dialecttest

import "strconv"

// OpenAI is the OpenAI API and every server that speaks it: the model in
// the body, "stream": true, a stream of data events ending in data: [DONE],
// errors as {"error":{"message","type","code"}}, the key as a bearer token.
var OpenAI = Speaker{
	Kind:     "openai",
	Model:    "gpt-4o-mini",
	Fallback: "gpt-4o-mini-backup",
	Call: func(model string, stream bool) Call {
		return Call{Path: "/v1/chat/completions", Body: `{"model":` + quoted(model) + `,"max_tokens":` +
			strconv.Itoa(MaxTokens) + streamField(stream) + `,"messages":[{"role":"user","content":"hi"}]}`}
	},
	KeyHeader: "Authorization",
	KeyPrefix: "Bearer ",
	Scripts: Scripts{
		Retryable:       "503",
		Invalid:         "400",
		Quota:           "429:insufficient_quota",
		Cut:             "stream:cut-after=3", // the role chunk, then two pieces
		Stall:           "stream:stall-after=3",
		FirstEventError: "overloaded",
	},
	InvalidType: "invalid_request_error",
	Answer:      openAIAnswer,
	Stream:      openAIStream,
	Error:       openAIError,
	Quota: func(body []byte) bool {
		e, err := openAIError(body)
		return err == nil && e.Code == "insufficient_quota"
	},
	ModelOf: modelInBody,
}

// streamField is the body member that asks for a stream, "" for none.
func streamField(stream bool) string {
	if stream {
		return `,"stream":true`
	}
	return ""
}

// openAIAnswer reads a chat completion.
func openAIAnswer(body []byte) (Answer, error) {
	var v struct {
		Model   string
		Choices []struct{ Message struct{ Content string } }
		Usage   struct {
			PromptTokens     int64 `json:"prompt_tokens"`
			CompletionTokens int64 `json:"completion_tokens"`
		}
	}
	if err := decode(body, &v, "a chat completion"); err != nil {
		return Answer{}, err
	}
	a := Answer{Model: v.Model, Input: v.Usage.PromptTokens, Output: v.Usage.CompletionTokens}
	for _, c := range v.Choices {
		a.Text += c.Message.Content
	}
	return a, nil
}

// openAIStream reads a chat completion stream.
func openAIStream(body []byte) (Stream, error) {
	var s Stream
	evs := sseEvents(body)
	for i, ev := range evs {
		s.Events++
		switch {
		case string(ev.data) == "[DONE]":
			s.End = true
		case isErrorData(ev.data):
			s.Errors++
			if i == len(evs)-1 {
				e, err := openAIError(ev.data)
				if err != nil {
					return s, err
				}
				s.Err = &e
			}
		default:
			var c struct {
				Choices []struct{ Delta struct{ Content string } }
			}
			if err := decode(ev.data, &c, "a chat completion chunk"); err != nil {
				return s, err
			}
			for _, ch := range c.Choices {
				if ch.Delta.Content != "" {
					s.Pieces = append(s.Pieces, ch.Delta.Content)
				}
			}
		}
	}
	return s, nil
}

// openAIError reads {"error":{"message","type","code"}}, whose code is a
// string, a number (Azure's "429" may be either) or null.
func openAIError(body []byte) (Error, error) {
	var v struct {
		Error *struct {
			Message string
			Type    string
			Code    any
		}
	}
	if err := decode(body, &v, "an OpenAI error"); err != nil {
		return Error{}, err
	}
	if v.Error == nil || v.Error.Message == "" {
		return Error{}, errNoMessage
	}
	e := Error{Type: v.Error.Type, Message: v.Error.Message}
	switch c := v.Error.Code.(type) {
	case string:
		e.Code = c
	case float64:
		e.Code = strconv.FormatFloat(c, 'f', -1, 64)
	}
	return e, nil
}
