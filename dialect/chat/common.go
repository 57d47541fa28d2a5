package chat

import (
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
)

// The APIs' names, as config kinds write them and as errors do.
const (
	openAIName    = "openai"
	anthropicName = "anthropic"
	geminiName    = "gemini"
	bedrockName   = "bedrock"
)

// display returns an API's name as errors write it.
func display(dialect string) string {
	switch dialect {
	case openAIName:
		return "OpenAI"
	case anthropicName:
		return "Anthropic"
	case geminiName:
		return "Gemini"
	case bedrockName:
		return "Bedrock"
	}
	return dialect
}

// extraName names an extra as errors write it: OpenAI's logprobs,
// Anthropic's built-in tool web_search_20250305.
func extraName(e Extra) string {
	if e.Feature == FeatureBuiltinTool {
		return display(e.Dialect) + "'s built-in tool " + e.Name
	}
	if e.In != "" {
		return display(e.Dialect) + "'s " + e.In + "." + e.Name
	}
	return display(e.Dialect) + "'s " + e.Name
}

// otherName names a part only one API knows, as errors write it.
func otherName(o *Other) string {
	if o == nil {
		return "an empty part"
	}
	return display(o.Dialect) + "'s " + o.Type + " block"
}

// writeExtras writes the extras of r that are dialect's into o (nested
// ones in the member they are in), the built-in tools into tools, and refuses
// any other API's.
func writeExtras(dialect string, r *Request, o *object, tools *[]any) error {
	for _, e := range r.Extras {
		if e.Dialect != dialect {
			return cannot(display(dialect), "%s", extraName(e))
		}
		if e.Feature == FeatureBuiltinTool {
			*tools = append(*tools, e.Value)
			continue
		}
		if e.In != "" {
			o.obj(e.In).set(e.Name, e.Value)
			continue
		}
		o.set(e.Name, e.Value)
	}
	return nil
}

// callNames maps the ids of the tool calls of a conversation to their
// tools' names, for the APIs whose tool results name the tool (Gemini).
func callNames(msgs []Message) map[string]string {
	names := make(map[string]string)
	for _, m := range msgs {
		for _, p := range m.Parts {
			if p.Type == PartToolCall && p.ToolCall != nil {
				names[p.ToolCall.ID] = p.ToolCall.Name
			}
		}
	}
	return names
}

// argsObject returns a tool call's arguments as a JSON object, for the
// APIs that carry them as one (all but OpenAI, which carries a string):
// empty arguments are {}; arguments that are no JSON object cannot be
// carried.
func argsObject(dialect string, c *ToolCall) (json.RawMessage, error) {
	a := json.RawMessage(strings.TrimSpace(string(c.Args)))
	if len(a) == 0 {
		return json.RawMessage("{}"), nil
	}
	if !isObject(a) {
		return nil, cannot(display(dialect), "the arguments of tool call %q, which are not a JSON object", c.ID)
	}
	return a, nil
}

// toolIDRE is what Anthropic and Bedrock take as a tool call's id.
var toolIDRE = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// checkToolID refuses an id that dialect does not take.
func checkToolID(dialect, id string) error {
	if !toolIDRE.MatchString(id) {
		return cannot(display(dialect), "tool call id %q (only letters, digits, _ and -)", id)
	}
	return nil
}

// textOnly returns the text of parts that are all text, joined by sep;
// ok is false when one is not.
func textOnly(parts []Part, sep string) (string, bool) {
	var b strings.Builder
	for i, p := range parts {
		if p.Type != PartText {
			return "", false
		}
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(p.Text)
	}
	return b.String(), true
}

// statusKind is what an error status stands for, for the encoders that
// name errors by kind.
type statusKind uint8

const (
	kindInvalid statusKind = iota
	kindAuth
	kindPermission
	kindNotFound
	kindTooLarge
	kindRateLimit
	kindServer
	kindUnavailable
	kindOverloaded
	kindTimeout
)

// kindOf returns the kind of an error status.
func kindOf(status int) statusKind {
	switch status {
	case http.StatusUnauthorized:
		return kindAuth
	case http.StatusForbidden:
		return kindPermission
	case http.StatusNotFound:
		return kindNotFound
	case http.StatusRequestEntityTooLarge:
		return kindTooLarge
	case http.StatusTooManyRequests:
		return kindRateLimit
	case http.StatusServiceUnavailable:
		return kindUnavailable
	case 529:
		return kindOverloaded
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return kindTimeout
	}
	if status >= 500 || status == 0 {
		return kindServer
	}
	return kindInvalid
}

// statusOr returns status when it is an HTTP error status, else def.
func statusOr(status, def int) int {
	if status >= 400 && status <= 599 {
		return status
	}
	return def
}

// cutStatus is the status of a stream cut before its end: a bad gateway.
const cutStatus = http.StatusBadGateway

// cutError is the error of a stream cut before its end.
func cutError(dialect string) *Error {
	return &Error{Status: cutStatus, Type: "stream_cut", Message: display(dialect) + " stream ended before its end"}
}

// errOf returns an EventError's error, a server error when it has none.
func errOf(ev Event) *Error {
	if ev.Err == nil {
		return &Error{Status: 500, Message: "stream error"}
	}
	return ev.Err
}

// turn is a run of messages of one role, as the APIs that take one turn
// per role in alternation take it (Anthropic, Gemini, Bedrock).
type turn struct {
	Role  Role
	Parts []Part // the tool results first
}

// mergeTurns makes msgs a conversation dialect takes: messages of one
// role in a row are one turn; a turn's tool results come first; each
// answers a tool call of the turn before, and each tool call of a turn
// that has a next one is answered in it; empty text, which says nothing
// and which the APIs refuse, is left out; a system message after the
// start, a message's name, and an empty turn cannot be written.
func mergeTurns(dialect string, msgs []Message) ([]turn, error) {
	var turns []turn
	for _, m := range msgs {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			return nil, cannot(display(dialect), "%s message after the conversation began", m.Role.a())
		}
		if m.Name != "" {
			return nil, cannot(display(dialect), "a message's name")
		}
		if len(turns) == 0 || turns[len(turns)-1].Role != m.Role {
			turns = append(turns, turn{Role: m.Role})
		}
		t := &turns[len(turns)-1]
		for _, p := range m.Parts {
			switch {
			case p.Type == PartToolResult && m.Role != RoleUser, p.Type == PartToolCall && m.Role != RoleAssistant:
				return nil, cannot(display(dialect), "%s in %s message", p.Type.a(), m.Role.a())
			case p.Type == PartText && p.Text == "" && p.Signature == "":
			case p.Type == PartToolResult:
				n := 0
				for n < len(t.Parts) && t.Parts[n].Type == PartToolResult {
					n++
				}
				t.Parts = slices.Insert(t.Parts, n, p)
			default:
				t.Parts = append(t.Parts, p)
			}
		}
	}
	for i, t := range turns {
		if len(t.Parts) == 0 {
			return nil, cannot(display(dialect), "an empty %s message", t.Role)
		}
		var prev []Part
		if i > 0 {
			prev = turns[i-1].Parts
		}
		for _, p := range t.Parts {
			switch {
			case p.Type == PartToolResult && !hasCall(prev, p.ToolResult.CallID):
				return nil, cannot(display(dialect), "tool result %q, which answers no tool call of the turn before", p.ToolResult.CallID)
			case p.Type == PartToolCall && i+1 < len(turns) && !hasResult(turns[i+1].Parts, p.ToolCall.ID):
				return nil, cannot(display(dialect), "tool call %q without its result in the next turn", p.ToolCall.ID)
			}
		}
	}
	return turns, nil
}

func hasCall(parts []Part, id string) bool {
	return slices.ContainsFunc(parts, func(p Part) bool { return p.Type == PartToolCall && p.ToolCall.ID == id })
}

func hasResult(parts []Part, id string) bool {
	return slices.ContainsFunc(parts, func(p Part) bool { return p.Type == PartToolResult && p.ToolResult.CallID == id })
}

// mergeExtras sets in o the members of extras: a nested object into the
// member of o it extends (stream_options.x beside include_usage,
// output_config.effort beside format), else as a member of its own.
func mergeExtras(o, extras *object) {
	for _, m := range extras.members {
		if c, ok := m.val.(*object); ok && o.has(m.key) {
			dst := o.obj(m.key)
			for _, cm := range c.members {
				dst.set(cm.key, cm.val)
			}
			continue
		}
		o.set(m.key, m.val)
	}
}

// dropEmptyText takes out of r the empty text parts, which say nothing
// and which the APIs write in ways that do not all read back (a part, an
// empty string, nothing): a decoder's last step. A part with a Signature
// is kept.
func dropEmptyText(r *Request) {
	keep := func(parts []Part) []Part {
		out := parts[:0]
		for _, p := range parts {
			if p.Type == PartText && p.Text == "" && p.Signature == "" {
				continue
			}
			if p.Type == PartToolResult && p.ToolResult != nil {
				c := *p.ToolResult
				c.Content = keepNil(c.Content)
				p.ToolResult = &c
			}
			out = append(out, p)
		}
		if len(out) == 0 {
			return nil
		}
		return out
	}
	r.System = keep(r.System)
	for i := range r.Messages {
		r.Messages[i].Parts = keep(r.Messages[i].Parts)
	}
}

// keepNil returns parts without its empty text parts, nil when none is
// left.
func keepNil(parts []Part) []Part {
	var out []Part
	for _, p := range parts {
		if p.Type != PartText || p.Text != "" || p.Signature != "" {
			out = append(out, p)
		}
	}
	return out
}
