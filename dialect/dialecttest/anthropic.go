package dialecttest

import "strconv"

// Anthropic is Anthropic's Messages API: the model in the body,
// "stream": true, a stream of named events ending in message_stop, errors
// as {"type":"error","error":{"type","message"}} (in a stream, an event:
// error), the key in x-api-key.
var Anthropic = Speaker{
	Kind:     "anthropic",
	Model:    "claude-haiku-4-5",
	Fallback: "claude-sonnet-4-5",
	Call: func(model string, stream bool) Call {
		return Call{Path: "/v1/messages", Body: `{"model":` + quoted(model) + `,"max_tokens":` +
			strconv.Itoa(MaxTokens) + streamField(stream) + `,"messages":[{"role":"user","content":"hi"}]}`}
	},
	KeyHeader: "X-Api-Key",
	Scripts: Scripts{
		Retryable:       "529",
		Invalid:         "400",
		Quota:           "429:insufficient_quota",
		Cut:             "stream:cut-after=4", // message_start, content_block_start, then two pieces
		Stall:           "stream:stall-after=4",
		FirstEventError: "overloaded",
	},
	InvalidType: "invalid_request_error",
	Answer:      anthropicAnswer,
	Stream:      anthropicStream,
	Error:       anthropicError,
	Quota: func(body []byte) bool {
		e, err := anthropicError(body)
		return err == nil && e.Message == "Your credit balance is too low to access the Anthropic API. "+
			"Please go to Plans & Billing to upgrade or purchase credits. (insufficient_quota)"
	},
	ModelOf: modelInBody,
}

// anthropicUsage is a message's usage.
type anthropicUsage struct {
	Input  int64 `json:"input_tokens"`
	Output int64 `json:"output_tokens"`
}

// anthropicAnswer reads a message.
func anthropicAnswer(body []byte) (Answer, error) {
	var v struct {
		Type    string
		Model   string
		Content []struct{ Type, Text string }
		Usage   anthropicUsage
	}
	if err := decode(body, &v, "an Anthropic message"); err != nil {
		return Answer{}, err
	}
	if v.Type != "message" {
		return Answer{}, errNotA("message", body)
	}
	a := Answer{Model: v.Model, Input: v.Usage.Input, Output: v.Usage.Output}
	for _, c := range v.Content {
		a.Text += c.Text
	}
	return a, nil
}

// anthropicStream reads a stream of message events.
func anthropicStream(body []byte) (Stream, error) {
	var s Stream
	evs := sseEvents(body)
	for i, ev := range evs {
		s.Events++
		switch ev.name {
		case "message_stop":
			s.End = true
		case "error":
			s.Errors++
			if i == len(evs)-1 {
				e, err := anthropicError(ev.data)
				if err != nil {
					return s, err
				}
				s.Err = &e
			}
		case "content_block_delta":
			var d struct{ Delta struct{ Type, Text string } }
			if err := decode(ev.data, &d, "a content_block_delta"); err != nil {
				return s, err
			}
			if d.Delta.Text != "" {
				s.Pieces = append(s.Pieces, d.Delta.Text)
			}
		}
	}
	return s, nil
}

// anthropicError reads {"type":"error","error":{"type","message"}}.
func anthropicError(body []byte) (Error, error) {
	var v struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := decode(body, &v, "an Anthropic error"); err != nil {
		return Error{}, err
	}
	if v.Type != "error" {
		return Error{}, errNotA("Anthropic error", body)
	}
	if v.Error.Message == "" {
		return Error{}, errNoMessage
	}
	return Error{Type: v.Error.Type, Code: v.Error.Type, Message: v.Error.Message}, nil
}
