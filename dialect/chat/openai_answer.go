package chat

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
)

// Answers.

// openAIFinish maps OpenAI's finish_reason to a StopReason.
func openAIFinish(s string) (StopReason, bool) {
	switch s {
	case "stop":
		return StopEndTurn, true
	case "length":
		return StopMaxTokens, true
	case "tool_calls", "function_call":
		return StopToolUse, true
	case "content_filter":
		return StopContentFilter, true
	}
	return "", false
}

// openAIFinishOut maps a StopReason to OpenAI's finish_reason.
func openAIFinishOut(s StopReason) (string, error) {
	switch s {
	case StopEndTurn, StopSequence, "":
		return "stop", nil
	case StopMaxTokens:
		return "length", nil
	case StopToolUse:
		return "tool_calls", nil
	case StopContentFilter:
		return "content_filter", nil
	}
	return "", cannot(openAIDisplay, "stop reason %s", s)
}

// openAIUsage is OpenAI's usage object.
type openAIUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
	PromptDetails    *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details,omitempty"`
}

func (w *openAIUsage) usage() Usage {
	var cached int64
	if w.PromptDetails != nil {
		cached = max(w.PromptDetails.CachedTokens, 0)
	}
	cached = min(cached, max(w.PromptTokens, 0))
	return Usage{Input: max(w.PromptTokens, 0) - cached, Output: max(w.CompletionTokens, 0), CacheRead: cached}
}

func openAIUsageOut(u Usage) *openAIUsage {
	w := &openAIUsage{PromptTokens: u.Prompt(), CompletionTokens: u.Output, TotalTokens: u.Total()}
	w.PromptDetails = &struct {
		CachedTokens int64 `json:"cached_tokens"`
	}{u.CacheRead}
	return w
}

// openAIAnswerIn is an answer as OpenAI writes it.
type openAIAnswerIn struct {
	ID      string           `json:"id"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []openAIChoiceAn `json:"choices"`
	Usage   *openAIUsage     `json:"usage"`
}

// openAIChoiceAn is a choice of an answer.
type openAIChoiceAn struct {
	Message struct {
		Content     *string          `json:"content"`
		Refusal     *string          `json:"refusal"`
		ToolCalls   []openAIToolCall `json:"tool_calls"`
		Annotations []any            `json:"annotations"`
		Audio       json.RawMessage  `json:"audio"`
	} `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

func (openAICodec) DecodeAnswer(body []byte) (*Answer, error) {
	var w openAIAnswerIn
	if !w.readFast(body) {
		if err := unmarshalFresh(body, &w); err != nil {
			return nil, malformed(openAIDisplay, "answer", err)
		}
	}
	if len(w.Choices) != 1 {
		return nil, notInModel(openAIDisplay, "answer with %d choices", len(w.Choices))
	}
	c := w.Choices[0]
	a := &Answer{ID: w.ID, Model: w.Model, Created: w.Created}
	switch {
	case len(c.Message.Annotations) > 0:
		return nil, notInModel(openAIDisplay, "answer's annotations")
	case !isNull(c.Message.Audio):
		return nil, notInModel(openAIDisplay, "answer's audio")
	case !isNull(c.Logprobs):
		return nil, notInModel(openAIDisplay, "answer's logprobs")
	}
	if c.Message.Content != nil && *c.Message.Content != "" {
		a.Content = append(a.Content, Text(*c.Message.Content))
	}
	for _, tc := range c.Message.ToolCalls {
		if tc.Type != "function" {
			return nil, notInModel(openAIDisplay, "tool call of type %q", tc.Type)
		}
		args := ""
		if tc.Function.Arguments != nil {
			args = *tc.Function.Arguments
		}
		a.Content = append(a.Content, Part{Type: PartToolCall,
			ToolCall: &ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(args)}})
	}
	stop, ok := openAIFinish(c.FinishReason)
	if !ok {
		return nil, notInModel(openAIDisplay, "finish_reason %q", c.FinishReason)
	}
	a.Stop = stop
	if c.Message.Refusal != nil && *c.Message.Refusal != "" {
		a.Content = append(a.Content, Text(*c.Message.Refusal))
		a.Stop = StopContentFilter
	}
	if w.Usage != nil {
		a.Usage = w.Usage.usage()
	}
	return a, nil
}

func (openAICodec) EncodeAnswer(a *Answer) ([]byte, error) {
	finish, err := openAIFinishOut(a.Stop)
	if err != nil {
		return nil, err
	}
	size, texts, calls := 320+len(a.ID)+len(a.Model), 0, 0
	for _, p := range a.Content {
		switch p.Type {
		case PartText:
			size += len(p.Text) + len(p.Text)/8
			texts++
		case PartToolCall:
			size += 96 + len(p.ToolCall.ID) + len(p.ToolCall.Name) + 2*len(p.ToolCall.Args)
			calls++
		default:
			return nil, cannot(openAIDisplay, "%s block in an answer", p.Type.a())
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"id":`...)
	b = appendString(b, a.ID)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = strconv.AppendInt(b, a.Created, 10)
	b = append(b, `,"model":`...)
	b = appendString(b, a.Model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if texts == 0 {
		b = append(b, "null"...)
	} else { // the text blocks as one string: escaped one by one, as each is whole UTF-8
		b = append(b, '"')
		for _, p := range a.Content {
			if p.Type == PartText {
				b = appendEscaped(b, p.Text)
			}
		}
		b = append(b, '"')
	}
	if calls > 0 {
		b = append(b, `,"tool_calls":[`...)
		for _, p := range a.Content {
			if p.Type == PartToolCall {
				if b[len(b)-1] != '[' {
					b = append(b, ',')
				}
				b = appendOpenAICall(b, p.ToolCall)
			}
		}
		b = append(b, ']')
	}
	b = append(b, `,"refusal":null},"logprobs":null,"finish_reason":`...)
	b = appendString(b, finish)
	b = append(b, `}],"usage":`...)
	b = openAIUsageOut(a.Usage).appendTo(b)
	return append(b, '}'), nil
}

// appendOpenAICall appends tool call c as an answer's message holds it.
func appendOpenAICall(b []byte, c *ToolCall) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, c.ID)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = appendString(b, c.Name)
	b = append(b, `,"arguments":`...)
	b = appendString(b, string(c.Args))
	return append(b, "}}"...)
}

// Errors.

// openAIErrorWire is OpenAI's error object.
type openAIErrorWire struct {
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	} `json:"error"`
}

func (openAICodec) DecodeError(status int, body []byte) *Error {
	var w openAIErrorWire
	if json.Unmarshal(body, &w) != nil || w.Error == nil {
		return &Error{Status: statusOr(status, 500), Message: strings.TrimSpace(string(body))}
	}
	code, _ := w.Error.Code.(string)
	typ := cmp.Or(code, w.Error.Type)
	if status == 0 {
		status = openAIEventStatus(w.Error.Type, code)
	}
	return &Error{Status: statusOr(status, 500), Type: typ, Message: w.Error.Message}
}

// openAIEventStatus is the status of an error event by its type and
// code, as OpenAI's streams carry no status.
func openAIEventStatus(typ, code string) int {
	for _, s := range []string{code, typ} {
		switch s {
		case "overloaded", "overloaded_error":
			return 529
		case "rate_limit_exceeded", "insufficient_quota", "requests", "tokens", "rate_limit_error":
			return 429
		case "invalid_request_error", "context_length_exceeded":
			return 400
		case "server_error", "api_error":
			return 500
		}
	}
	return 500
}

// openAITypes are the type and code OpenAI gives each kind of error.
var openAITypes = map[statusKind][2]string{
	kindInvalid:     {"invalid_request_error", ""},
	kindAuth:        {"invalid_request_error", "invalid_api_key"},
	kindPermission:  {"invalid_request_error", ""},
	kindNotFound:    {"invalid_request_error", "model_not_found"},
	kindTooLarge:    {"invalid_request_error", ""},
	kindRateLimit:   {"requests", "rate_limit_exceeded"},
	kindServer:      {"server_error", ""},
	kindUnavailable: {"server_error", ""},
	kindOverloaded:  {"server_error", "overloaded"},
	kindTimeout:     {"server_error", "timeout"},
}

func (openAICodec) EncodeError(e *Error) []byte {
	t := openAITypes[kindOf(e.Status)]
	var code any
	if t[1] != "" {
		code = t[1]
	}
	b, _ := json.Marshal(kv("error", kv("message", e.Message, "type", t[0], "param", nil, "code", code)))
	return b
}
