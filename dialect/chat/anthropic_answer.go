package chat

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/sluice-llm/sluice/internal/request"
)

// Answers.

// anthropicStop maps Anthropic's stop_reason to a StopReason.
func anthropicStop(s string) (StopReason, bool) {
	switch s {
	case "end_turn":
		return StopEndTurn, true
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens, true
	case "stop_sequence":
		return StopSequence, true
	case "tool_use":
		return StopToolUse, true
	case "refusal":
		return StopContentFilter, true
	}
	return "", false
}

// anthropicStopOut maps a StopReason to Anthropic's stop_reason.
func anthropicStopOut(s StopReason) (string, error) {
	switch s {
	case StopEndTurn, "":
		return "end_turn", nil
	case StopMaxTokens:
		return "max_tokens", nil
	case StopSequence:
		return "stop_sequence", nil
	case StopToolUse:
		return "tool_use", nil
	case StopContentFilter:
		return "refusal", nil
	}
	return "", cannot(anthropicDisplay, "stop reason %s", s)
}

// anthropicUsage is Anthropic's usage object.
type anthropicUsage struct {
	InputTokens              *int64 `json:"input_tokens,omitempty"`
	CacheCreationInputTokens *int64 `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     *int64 `json:"cache_read_input_tokens,omitempty"`
	OutputTokens             *int64 `json:"output_tokens,omitempty"`
}

// merge sets in u what w holds.
func (w *anthropicUsage) merge(u *Usage) {
	set := func(p *int64, v *int64) {
		if v != nil {
			*p = max(*v, 0)
		}
	}
	set(&u.Input, w.InputTokens)
	set(&u.CacheWrite, w.CacheCreationInputTokens)
	set(&u.CacheRead, w.CacheReadInputTokens)
	set(&u.Output, w.OutputTokens)
}

func anthropicUsageOut(u Usage) *anthropicUsage {
	return &anthropicUsage{InputTokens: &u.Input, CacheCreationInputTokens: &u.CacheWrite,
		CacheReadInputTokens: &u.CacheRead, OutputTokens: &u.Output}
}

// anthropicMessage is a message, whole (an answer, or a stream's
// message_start).
type anthropicMessage struct {
	ID           string            `json:"id"`
	Type         string            `json:"type"`
	Model        string            `json:"model"`
	Content      []json.RawMessage `json:"content"`
	StopReason   *string           `json:"stop_reason"`
	StopSequence *string           `json:"stop_sequence"`
	Usage        *anthropicUsage   `json:"usage"`

	// blocks is the content array as written, not split, when readFast
	// borrowed it (Content is then nil): DecodeAnswer reads its blocks in
	// the pass that splits them.
	blocks []byte
}

func (anthropicCodec) DecodeAnswer(body []byte) (*Answer, error) {
	var w anthropicMessage
	if !w.readFast(body, true, true) { // the blocks are body's: what is kept of them is copied
		if err := unmarshalFresh(body, &w); err != nil {
			return nil, malformed(anthropicDisplay, "answer", err)
		}
	}
	return w.answer()
}

// answer is the Answer w holds, its blocks read from w.blocks when
// readFast left them there, else from w.Content.
func (w *anthropicMessage) answer() (*Answer, error) {
	if w.Type != "message" {
		return nil, malformedf(anthropicDisplay, "answer", "type %q, not message", w.Type)
	}
	a := &Answer{ID: w.ID, Model: w.Model}
	var err error
	if w.blocks != nil {
		a.Content, err = anthropicAnswerBlocks(w.blocks)
	} else {
		a.Content = make([]Part, 0, len(w.Content))
		for _, raw := range w.Content {
			var p Part
			if p, err = anthropicAnswerPart(anthropicBlock(raw)); err != nil {
				break
			}
			a.Content = append(a.Content, p)
		}
	}
	if err != nil {
		return nil, err
	}
	if w.StopReason != nil {
		stop, ok := anthropicStop(*w.StopReason)
		if !ok {
			return nil, notInModel(anthropicDisplay, "stop_reason %q", *w.StopReason)
		}
		a.Stop = stop
	}
	if w.StopSequence != nil {
		a.StopSequence = *w.StopSequence
	}
	if w.Usage != nil {
		w.Usage.merge(&a.Usage)
	}
	return a, nil
}

// anthropicAnswerBlocks reads the content blocks of an answer, the array
// v, a part of its body, in one pass (request.ItemMembers): each block's
// members as the pass shows them, a block that cannot be read so read
// again whole (anthropicBlock).
func anthropicAnswerBlocks(v []byte) ([]Part, error) {
	// Room for the blocks as compact JSON separates them ("},{"), a guess
	// that arguments holding objects may raise, so at most 64.
	parts := make([]Part, 0, min(bytes.Count(v, blockSep)+1, 64))
	var b anthropicBlockIn
	var r blockRead
	fast := true
	var err error
	ok := request.ItemMembers(v, func(k, val []byte) bool {
		fast = fast && r.member(&b, k, val)
		return true
	}, func(raw []byte) bool {
		var p Part
		if fast && raw[0] == '{' {
			p, err = anthropicAnswerPart(b.part(raw, r.typ, r.given, true))
		} else {
			p, err = anthropicAnswerPart(anthropicBlock(raw))
		}
		parts = append(parts, p)
		b, r, fast = anthropicBlockIn{}, blockRead{}, true
		return err == nil
	})
	if err == nil && !ok {
		err = malformedf(anthropicDisplay, "answer", "content is no array of blocks")
	}
	return parts, err
}

// blockSep is what separates two blocks of an answer's content written
// compactly, as Anthropic writes it.
var blockSep = []byte("},{")

// anthropicAnswerPart is the part p read from a block of an answer, or
// err: a text or a tool call, which holds nothing of the answer's body.
func anthropicAnswerPart(p Part, err error) (Part, error) {
	switch {
	case err != nil:
		return Part{}, err
	case p.Type != PartText && p.Type != PartToolCall:
		return Part{}, notInModel(anthropicDisplay, "answer's %s block", anthropicBlockType(p))
	}
	p.Cache = nil
	if p.ToolCall != nil { // its strings are copies, its arguments the body's own
		p.ToolCall.Args = bytes.Clone(p.ToolCall.Args)
	}
	return p, nil
}

// anthropicBlockType names a part as Anthropic's block types do.
func anthropicBlockType(p Part) string {
	if p.Type == PartOther {
		return p.Other.Type
	}
	return p.Type.String()
}

func (anthropicCodec) EncodeAnswer(a *Answer) ([]byte, error) {
	stop, err := anthropicStopOut(a.Stop)
	if err != nil {
		return nil, err
	}
	size := 320 + len(a.ID) + len(a.Model) + len(a.StopSequence)
	for _, p := range a.Content {
		size += 32 + len(p.Text) + len(p.Text)/8
		if p.ToolCall != nil {
			size += 48 + len(p.ToolCall.ID) + len(p.ToolCall.Name) + len(p.ToolCall.Args)
		}
	}
	b := make([]byte, 0, size)
	b = append(b, `{"id":`...)
	b = appendString(b, a.ID)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, a.Model)
	b = append(b, `,"content":[`...)
	for i, p := range a.Content {
		if i > 0 {
			b = append(b, ',')
		}
		switch p.Type {
		case PartText:
			b = append(b, `{"type":"text","text":`...)
			b = appendString(b, p.Text)
		case PartToolCall:
			args, err := argsObject(anthropicName, p.ToolCall)
			if err != nil {
				return nil, err
			}
			b = append(b, `{"type":"tool_use","id":`...)
			b = appendString(b, p.ToolCall.ID)
			b = append(b, `,"name":`...)
			b = appendString(b, p.ToolCall.Name)
			b = append(b, `,"input":`...)
			var ok bool
			if b, ok = appendRaw(b, args); !ok {
				return nil, cannot(anthropicDisplay, "the arguments of tool call %q, which are not JSON", p.ToolCall.ID)
			}
		default:
			return nil, cannot(anthropicDisplay, "%s block in an answer", p.Type.a())
		}
		b = append(b, '}')
	}
	b = append(b, `],"stop_reason":`...)
	b = appendString(b, stop)
	b = append(b, `,"stop_sequence":`...)
	if a.StopSequence != "" {
		b = appendString(b, a.StopSequence)
	} else {
		b = append(b, "null"...)
	}
	b = append(b, `,"usage":`...)
	b = anthropicUsageOut(a.Usage).appendTo(b)
	return append(b, '}'), nil
}

func anthropicToolUse(id, name string, input json.RawMessage) *object {
	o := &object{}
	o.set("type", "tool_use")
	o.set("id", id)
	o.set("name", name)
	o.set("input", input)
	return o
}

// Errors.

// anthropicStatuses are the status of each of Anthropic's error types.
var anthropicStatuses = map[string]int{
	"invalid_request_error": 400, "authentication_error": 401, "billing_error": 402, "permission_error": 403,
	"not_found_error": 404, "request_too_large": 413, "rate_limit_error": 429, "api_error": 500,
	"timeout_error": 504, "overloaded_error": 529,
}

// anthropicTypes are the error type of each kind of error.
var anthropicTypes = map[statusKind]string{
	kindInvalid: "invalid_request_error", kindAuth: "authentication_error", kindPermission: "permission_error",
	kindNotFound: "not_found_error", kindTooLarge: "request_too_large", kindRateLimit: "rate_limit_error",
	kindServer: "api_error", kindUnavailable: "overloaded_error", kindOverloaded: "overloaded_error",
	kindTimeout: "timeout_error",
}

func (anthropicCodec) DecodeError(status int, body []byte) *Error {
	var w struct {
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &w) != nil || w.Error == nil {
		return &Error{Status: statusOr(status, 500), Message: strings.TrimSpace(string(body))}
	}
	if status == 0 {
		status = anthropicStatuses[w.Error.Type]
	}
	return &Error{Status: statusOr(status, 500), Type: w.Error.Type, Message: w.Error.Message}
}

func (anthropicCodec) EncodeError(e *Error) []byte {
	b, _ := json.Marshal(kv("type", "error", "error", kv("type", anthropicTypes[kindOf(e.Status)], "message", e.Message)))
	return b
}

// anthropicIndex reads a stream event's index.
func anthropicIndex(v *int) (int, error) {
	if v == nil || *v < 0 {
		return 0, malformedf(anthropicDisplay, "stream event", "no index")
	}
	return *v, nil
}
