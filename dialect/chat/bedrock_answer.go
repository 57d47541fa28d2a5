package chat

import (
	"encoding/json"
	"strings"
)

// Answers.

// bedrockStop maps a stopReason to a StopReason.
func bedrockStop(s string) (StopReason, bool) {
	switch s {
	case "end_turn":
		return StopEndTurn, true
	case "tool_use":
		return StopToolUse, true
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens, true
	case "stop_sequence":
		return StopSequence, true
	case "guardrail_intervened", "content_filtered":
		return StopContentFilter, true
	}
	return "", false
}

// bedrockStopOut maps a StopReason to a stopReason.
func bedrockStopOut(s StopReason) (string, error) {
	switch s {
	case StopEndTurn, "":
		return "end_turn", nil
	case StopToolUse:
		return "tool_use", nil
	case StopMaxTokens:
		return "max_tokens", nil
	case StopSequence:
		return "stop_sequence", nil
	case StopContentFilter:
		return "content_filtered", nil
	}
	return "", cannot(bedrockDisplay, "stop reason %s", s)
}

// bedrockUsage is Converse's usage.
type bedrockUsage struct {
	InputTokens           int64 `json:"inputTokens"`
	OutputTokens          int64 `json:"outputTokens"`
	TotalTokens           int64 `json:"totalTokens"`
	CacheReadInputTokens  int64 `json:"cacheReadInputTokens,omitempty"`
	CacheWriteInputTokens int64 `json:"cacheWriteInputTokens,omitempty"`
}

func (w *bedrockUsage) usage() Usage {
	return Usage{Input: max(w.InputTokens, 0), Output: max(w.OutputTokens, 0),
		CacheRead: max(w.CacheReadInputTokens, 0), CacheWrite: max(w.CacheWriteInputTokens, 0)}
}

func bedrockUsageOut(u Usage) *bedrockUsage {
	return &bedrockUsage{InputTokens: u.Input, OutputTokens: u.Output, TotalTokens: u.Total(),
		CacheReadInputTokens: u.CacheRead, CacheWriteInputTokens: u.CacheWrite}
}

func (bedrockCodec) DecodeAnswer(body []byte) (*Answer, error) {
	var w struct {
		Output struct {
			Message *struct {
				Content json.RawMessage `json:"content"`
			} `json:"message"`
		} `json:"output"`
		StopReason string        `json:"stopReason"`
		Usage      *bedrockUsage `json:"usage"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, malformed(bedrockDisplay, "answer", err)
	}
	if w.Output.Message == nil {
		return nil, malformedf(bedrockDisplay, "answer", "no output.message")
	}
	a := &Answer{}
	parts, err := bedrockBlocks(w.Output.Message.Content, "content")
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if p.Type != PartText && p.Type != PartToolCall {
			return nil, notInModel(bedrockDisplay, "answer's %s block", bedrockPartType(p))
		}
		p.Cache = nil
		a.Content = append(a.Content, p)
	}
	stop, ok := bedrockStop(w.StopReason)
	if !ok {
		return nil, notInModel(bedrockDisplay, "stopReason %q", w.StopReason)
	}
	a.Stop = stop
	if w.Usage != nil {
		a.Usage = w.Usage.usage()
	}
	return a, nil
}

func (bedrockCodec) EncodeAnswer(a *Answer) ([]byte, error) {
	stop, err := bedrockStopOut(a.Stop)
	if err != nil {
		return nil, err
	}
	content := []any{}
	for _, p := range a.Content {
		switch p.Type {
		case PartText:
			content = append(content, kv("text", p.Text))
		case PartToolCall:
			args, err := argsObject(bedrockName, p.ToolCall)
			if err != nil {
				return nil, err
			}
			content = append(content, kv("toolUse", kv("toolUseId", p.ToolCall.ID, "name", p.ToolCall.Name, "input", args)))
		default:
			return nil, cannot(bedrockDisplay, "%s block in an answer", p.Type.a())
		}
	}
	o := &object{}
	o.set("output", kv("message", kv("role", "assistant", "content", content)))
	o.set("stopReason", stop)
	o.set("usage", bedrockUsageOut(a.Usage))
	o.set("metrics", kv("latencyMs", 0))
	return o.bytes()
}

// Errors.

// bedrockErrorTypes are the error type of each kind of error, as
// x-amzn-ErrorType names it; a stream's exception frame names it with a
// lower-case first letter.
var bedrockErrorTypes = map[statusKind]string{
	kindInvalid: "ValidationException", kindAuth: "AccessDeniedException", kindPermission: "AccessDeniedException",
	kindNotFound: "ResourceNotFoundException", kindTooLarge: "ValidationException", kindRateLimit: "ThrottlingException",
	kindServer: "InternalServerException", kindUnavailable: "ServiceUnavailableException",
	kindOverloaded: "ServiceUnavailableException", kindTimeout: "ModelTimeoutException",
}

// bedrockStatuses are the status of each of Bedrock's error types.
var bedrockStatuses = map[string]int{
	"validationexception": 400, "accessdeniedexception": 403, "resourcenotfoundexception": 404,
	"throttlingexception": 429, "servicequotaexceededexception": 429, "modelnotreadyexception": 429,
	"internalserverexception": 500, "modelstreamerrorexception": 500, "modelerrorexception": 424,
	"serviceunavailableexception": 503, "modeltimeoutexception": 408,
}

// BedrockErrorType returns the error type Bedrock gives an error of
// status, as its x-amzn-ErrorType header names it (ThrottlingException).
func BedrockErrorType(status int) string { return bedrockErrorTypes[kindOf(status)] }

func (bedrockCodec) DecodeError(status int, body []byte) *Error {
	var w struct {
		Message *string `json:"message"` // also "Message", as some of Bedrock's errors write it
	}
	if json.Unmarshal(body, &w) != nil || w.Message == nil {
		return &Error{Status: statusOr(status, 500), Message: strings.TrimSpace(string(body))}
	}
	return &Error{Status: statusOr(status, 500), Message: *w.Message}
}

func (bedrockCodec) EncodeError(e *Error) []byte {
	b, _ := json.Marshal(kv("message", e.Message))
	return b
}
