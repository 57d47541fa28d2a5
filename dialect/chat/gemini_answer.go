package chat

import (
	"encoding/json"
	"net/http"
	"strings"
)

// Answers.

// geminiFinish maps a finishReason to a StopReason; calls says the
// answer called a tool.
func geminiFinish(s string, calls bool) StopReason {
	switch s {
	case "STOP":
		if calls {
			return StopToolUse
		}
		return StopEndTurn
	case "MAX_TOKENS":
		return StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return StopContentFilter
	}
	return StopError
}

// geminiFinishOut maps a StopReason to a finishReason.
func geminiFinishOut(s StopReason) string {
	switch s {
	case StopMaxTokens:
		return "MAX_TOKENS"
	case StopContentFilter:
		return "SAFETY"
	case StopError:
		return "OTHER"
	}
	return "STOP"
}

// geminiUsage is usageMetadata.
type geminiUsage struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	TotalTokenCount         int64 `json:"totalTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
	ToolUsePromptTokenCount int64 `json:"toolUsePromptTokenCount,omitempty"`
}

func (w *geminiUsage) usage() Usage {
	prompt := max(w.PromptTokenCount, 0) + max(w.ToolUsePromptTokenCount, 0)
	cached := min(max(w.CachedContentTokenCount, 0), prompt)
	return Usage{Input: prompt - cached, CacheRead: cached,
		Output: max(w.CandidatesTokenCount, 0) + max(w.ThoughtsTokenCount, 0)}
}

func geminiUsageOut(u Usage) *geminiUsage {
	return &geminiUsage{PromptTokenCount: u.Prompt(), CandidatesTokenCount: u.Output, TotalTokenCount: u.Total(),
		CachedContentTokenCount: u.CacheRead}
}

// geminiResponse is a GenerateContentResponse, whole or a stream's
// chunk.
type geminiResponse struct {
	Candidates []struct {
		Content      *geminiContent `json:"content"`
		FinishReason string         `json:"finishReason"`
		Index        int            `json:"index"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata *geminiUsage    `json:"usageMetadata"`
	ModelVersion  string          `json:"modelVersion"`
	ResponseID    string          `json:"responseId"`
	Error         json.RawMessage `json:"error"`
}

// geminiIDPrefix is the prefix of the ids made up for an answer's calls.
func geminiIDPrefix(responseID string) string {
	var b strings.Builder
	for _, c := range responseID {
		if c < 128 && (c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "call_"
	}
	return "call_" + b.String() + "_"
}

// geminiAnswerParts reads a candidate's parts; calls makes the ids.
func geminiAnswerParts(c *geminiContent, calls *geminiCalls) ([]Part, error) {
	if c == nil {
		return nil, nil
	}
	var parts []Part
	for _, raw := range c.Parts {
		p, err := geminiPartIn(raw, calls)
		if err != nil {
			return nil, err
		}
		if p.Type != PartText && p.Type != PartToolCall {
			return nil, notInModel(geminiDisplay, "answer's %s part", geminiPartType(p))
		}
		if p.Type == PartText && p.Text == "" && p.Signature == "" {
			continue // says nothing
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// geminiPartType names a part as errors do.
func geminiPartType(p Part) string {
	if p.Type == PartOther {
		return p.Other.Type
	}
	return p.Type.String()
}

func (geminiCodec) DecodeAnswer(body []byte) (*Answer, error) {
	var w geminiResponse
	if err := json.Unmarshal(body, &w); err != nil {
		return nil, malformed(geminiDisplay, "answer", err)
	}
	a := &Answer{ID: w.ResponseID, Model: w.ModelVersion}
	if w.UsageMetadata != nil {
		a.Usage = w.UsageMetadata.usage()
	}
	switch len(w.Candidates) {
	case 0:
		if w.PromptFeedback == nil || w.PromptFeedback.BlockReason == "" {
			return nil, malformedf(geminiDisplay, "answer", "no candidates and no blockReason")
		}
		a.Stop = StopContentFilter
		return a, nil
	case 1:
	default:
		return nil, notInModel(geminiDisplay, "answer with %d candidates", len(w.Candidates))
	}
	c := w.Candidates[0]
	parts, err := geminiAnswerParts(c.Content, &geminiCalls{prefix: geminiIDPrefix(w.ResponseID)})
	if err != nil {
		return nil, err
	}
	a.Content = parts
	a.Stop = geminiFinish(c.FinishReason, hasCallIn(parts))
	return a, nil
}

func hasCallIn(parts []Part) bool {
	for _, p := range parts {
		if p.Type == PartToolCall {
			return true
		}
	}
	return false
}

func (geminiCodec) EncodeAnswer(a *Answer) ([]byte, error) {
	parts := []any{}
	for _, p := range a.Content {
		switch p.Type {
		case PartText:
			parts = append(parts, geminiTextOut(p))
		case PartToolCall:
			gp, err := geminiPartOut(p, nil)
			if err != nil {
				return nil, err
			}
			parts = append(parts, gp)
		default:
			return nil, cannot(geminiDisplay, "%s block in an answer", p.Type.a())
		}
	}
	o := &object{}
	cand := kv("content", kv("parts", parts, "role", "model"), "finishReason", geminiFinishOut(a.Stop), "index", 0)
	o.set("candidates", []any{cand})
	o.set("usageMetadata", geminiUsageOut(a.Usage))
	o.set("modelVersion", a.Model)
	o.set("responseId", a.ID)
	return o.bytes()
}

// Errors.

// geminiStatusNames are the google.rpc status of each kind of error.
var geminiStatusNames = map[statusKind]string{
	kindInvalid: "INVALID_ARGUMENT", kindAuth: "UNAUTHENTICATED", kindPermission: "PERMISSION_DENIED",
	kindNotFound: "NOT_FOUND", kindTooLarge: "INVALID_ARGUMENT", kindRateLimit: "RESOURCE_EXHAUSTED",
	kindServer: "INTERNAL", kindUnavailable: "UNAVAILABLE", kindOverloaded: "UNAVAILABLE",
	kindTimeout: "DEADLINE_EXCEEDED",
}

// geminiStatusCodes are the HTTP status of each google.rpc status.
var geminiStatusCodes = map[string]int{
	"INVALID_ARGUMENT": 400, "FAILED_PRECONDITION": 400, "OUT_OF_RANGE": 400, "UNAUTHENTICATED": 401,
	"PERMISSION_DENIED": 403, "NOT_FOUND": 404, "ABORTED": 409, "ALREADY_EXISTS": 409,
	"RESOURCE_EXHAUSTED": 429, "CANCELLED": 499, "INTERNAL": 500, "UNKNOWN": 500, "DATA_LOSS": 500,
	"NOT_IMPLEMENTED": 501, "UNAVAILABLE": 503, "DEADLINE_EXCEEDED": 504,
}

func (geminiCodec) DecodeError(status int, body []byte) *Error {
	var w struct {
		Error *struct {
			Code    any    `json:"code"`
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &w) != nil || w.Error == nil {
		return &Error{Status: statusOr(status, 500), Message: strings.TrimSpace(string(body))}
	}
	if status == 0 {
		if n, ok := w.Error.Code.(float64); ok {
			status = int(n)
		}
		if status < 400 || status > 599 {
			status = geminiStatusCodes[w.Error.Status]
		}
	}
	return &Error{Status: statusOr(status, 500), Type: w.Error.Status, Message: w.Error.Message}
}

func (geminiCodec) EncodeError(e *Error) []byte {
	status := statusOr(e.Status, http.StatusInternalServerError)
	if status == 529 {
		status = http.StatusServiceUnavailable // Google's overload
	}
	b, _ := json.Marshal(kv("error", kv("code", status, "message", e.Message, "status", geminiStatusNames[kindOf(e.Status)])))
	return b
}
