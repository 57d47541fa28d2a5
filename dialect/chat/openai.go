package chat

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"
)

// OpenAI is OpenAI's Chat Completions API (/v1/chat/completions), as
// OpenAI and the servers that speak its API take it.
//
// How it maps:
//   - leading system and developer messages are the System prompt; a
//     later one is a RoleSystem message;
//   - a tool message is a user message holding one tool result; a user
//     message holding tool results is written as tool messages first,
//     then a user message of the rest;
//   - the tool arguments are the string OpenAI carries, as written;
//   - a tool result's IsError is not carried: OpenAI has no such flag,
//     and its content says what failed;
//   - a Cache breakpoint is left out (OpenAI caches on its own);
//   - MaxTokens is written as max_completion_tokens, and read from it or
//     from max_tokens;
//   - an answer's refusal is read as text with StopContentFilter;
//   - usage: prompt_tokens holds the cached tokens, so Input is
//     prompt_tokens less prompt_tokens_details.cached_tokens, and
//     prompt_tokens is written as the whole prompt (cache writes
//     included: OpenAI counts no writes apart).
var OpenAI Codec = openAICodec{}

type openAICodec struct{}

const openAIDisplay = "OpenAI"

func (openAICodec) Name() string { return openAIName }

// openAIAdvisory are the members of a request that do not change its
// answer.
var openAIAdvisory = map[string]bool{
	"metadata": true, "store": true, "service_tier": true, "prompt_cache_key": true,
	"prompt_cache_retention": true, "safety_identifier": true,
}

// openAIFeatures are the members of a request the model has no field
// for, by what they ask.
var openAIFeatures = map[string]Feature{
	"logprobs": FeatureLogprobs, "top_logprobs": FeatureLogprobs,
	"audio": FeatureAudio, "modalities": FeatureAudio,
	"reasoning_effort": FeatureThinking, "verbosity": FeatureOther,
	"web_search_options": FeatureBuiltinTool,
}

func (openAICodec) DecodeRequest(body []byte) (*Request, error) {
	ms, err := members(body)
	if err != nil {
		return nil, malformed(openAIDisplay, "request", err)
	}
	r := &Request{}
	var maxTokens, maxCompletion int64
	for _, m := range ms {
		if isNull(m.Value) {
			continue
		}
		var err error
		switch m.Key {
		case "model":
			err = unmarshal(m.Value, &r.Model, m.Key)
		case "messages":
			err = openAIMessages(r, m.Value)
		case "tools":
			err = openAITools(r, m.Value)
		case "tool_choice":
			r.ToolChoice, err = openAIToolChoice(m.Value)
		case "parallel_tool_calls":
			err = unmarshal(m.Value, &r.ParallelToolCalls, m.Key)
		case "response_format":
			r.Format, err = openAIFormat(m.Value)
		case "stop":
			err = openAIStop(r, m.Value)
		case "temperature":
			err = unmarshal(m.Value, &r.Temperature, m.Key)
		case "top_p":
			err = unmarshal(m.Value, &r.TopP, m.Key)
		case "max_tokens":
			err = unmarshal(m.Value, &maxTokens, m.Key)
		case "max_completion_tokens":
			err = unmarshal(m.Value, &maxCompletion, m.Key)
		case "seed":
			err = unmarshal(m.Value, &r.Seed, m.Key)
		case "presence_penalty":
			err = unmarshal(m.Value, &r.PresencePenalty, m.Key)
		case "frequency_penalty":
			err = unmarshal(m.Value, &r.FrequencyPenalty, m.Key)
		case "user":
			err = unmarshal(m.Value, &r.User, m.Key)
		case "stream":
			err = unmarshal(m.Value, &r.Stream, m.Key)
		case "stream_options":
			err = openAIStreamOptions(r, m.Value)
		case "n":
			err = unmarshal(m.Value, &r.N, m.Key)
		case "modalities":
			var mods []string
			if err = unmarshal(m.Value, &mods, m.Key); err == nil && !(len(mods) == 1 && mods[0] == "text") {
				r.Extras = append(r.Extras, Extra{Feature: FeatureAudio, Dialect: openAIName, Name: m.Key, Value: m.Value})
			} // ["text"] alone is the default
		default:
			f, ok := openAIFeatures[m.Key]
			if !ok {
				f = FeatureOther
			}
			r.Extras = append(r.Extras, Extra{Feature: f, Dialect: openAIName, Name: m.Key, Value: m.Value,
				Advisory: openAIAdvisory[m.Key]})
		}
		if err != nil {
			return nil, malformed(openAIDisplay, "request", err)
		}
	}
	if maxTokens != 0 && maxCompletion != 0 && maxTokens != maxCompletion {
		return nil, malformedf(openAIDisplay, "request", "max_tokens %d and max_completion_tokens %d differ", maxTokens, maxCompletion)
	}
	r.MaxTokens = max(maxTokens, maxCompletion)
	if r.N < 0 || r.MaxTokens < 0 {
		return nil, malformedf(openAIDisplay, "request", "a negative n or max_tokens")
	}
	dropEmptyText(r)
	return r, nil
}

func openAIStreamOptions(r *Request, v json.RawMessage) error {
	ms, err := members(v)
	if err != nil {
		return malformed(openAIDisplay, "stream_options", err)
	}
	for _, m := range ms {
		if m.Key == "include_usage" {
			if err := unmarshal(m.Value, &r.IncludeUsage, "stream_options.include_usage"); err != nil {
				return err
			}
			continue
		}
		r.Extras = append(r.Extras, Extra{Feature: FeatureOther, Dialect: openAIName, In: "stream_options", Name: m.Key,
			Value: m.Value, Advisory: true})
	}
	return nil
}

func openAIStop(r *Request, v json.RawMessage) error {
	if isString(v) {
		var s string
		if err := unmarshal(v, &s, "stop"); err != nil {
			return err
		}
		r.Stop = []string{s}
		return nil
	}
	return unmarshal(v, &r.Stop, "stop")
}

// openAIMessage is a chat message as OpenAI writes it.
type openAIMessage struct {
	Role       string           `json:"role"`
	Content    json.RawMessage  `json:"content"`
	Name       string           `json:"name"`
	ToolCalls  []openAIToolCall `json:"tool_calls"`
	ToolCallID string           `json:"tool_call_id"`
	Refusal    *string          `json:"refusal"`
}

type openAIToolCall struct {
	Index    *int   `json:"index,omitempty"` // in a stream's delta
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string  `json:"name,omitempty"`
		Arguments *string `json:"arguments,omitempty"`
	} `json:"function"`
}

// fill sets om from the message's members ms as json.Unmarshal would,
// when each is named exactly as a field and of plain values
// (unmarshalFast, readToolCalls); false, for json.Unmarshal
// to read the message, when not.
func (om *openAIMessage) fill(ms []member) bool {
	for _, m := range ms {
		var ok bool
		switch m.Key {
		case "role":
			ok = unmarshalFast(m.Value, &om.Role)
		case "content":
			om.Content, ok = m.Value, true
		case "name":
			ok = unmarshalFast(m.Value, &om.Name)
		case "tool_call_id":
			ok = unmarshalFast(m.Value, &om.ToolCallID)
		case "refusal":
			ok = readStringPtr(m.Value, &om.Refusal, new(string))
		case "tool_calls":
			ok = readToolCalls(m.Value, &om.ToolCalls)
		}
		if !ok {
			return false
		}
	}
	return true
}

// openAIMessageKeys are the members of a message the model carries.
var openAIMessageKeys = map[string]bool{
	"role": true, "content": true, "name": true, "tool_calls": true, "tool_call_id": true, "refusal": true,
}

func openAIMessages(r *Request, v json.RawMessage) error {
	var raws []json.RawMessage
	if err := rawsIn(v, &raws, "messages"); err != nil {
		return err
	}
	in := openAIRequest{Request: r}
	for i, raw := range raws {
		ms, err := membersOwned(raw)
		if err != nil {
			return malformed(openAIDisplay, "message "+strconv.Itoa(i), err)
		}
		for _, m := range ms {
			if !openAIMessageKeys[m.Key] && !isNull(m.Value) {
				return notInModel(openAIDisplay, "message member %q", m.Key)
			}
		}
		var om openAIMessage
		if !om.fill(ms) {
			if err := unmarshalFresh(raw, &om); err != nil {
				return malformed(openAIDisplay, "message "+strconv.Itoa(i), err)
			}
		}
		if err := openAIMessageIn(&in, &om); err != nil {
			return err
		}
	}
	return nil
}

// openAIRequest is a request being read: whether the last message read
// was a tool message.
type openAIRequest struct {
	*Request
	toolTurn bool
}

func openAIMessageIn(r *openAIRequest, om *openAIMessage) error {
	if om.Role != "tool" {
		r.toolTurn = false
	}
	switch om.Role {
	case "system", "developer":
		parts, err := openAIContent(om.Content, false)
		if err != nil {
			return err
		}
		if len(r.Messages) == 0 && om.Name == "" {
			r.System = append(r.System, parts...)
			return nil
		}
		r.Messages = append(r.Messages, Message{Role: RoleSystem, Parts: parts, Name: om.Name})
	case "user":
		parts, err := openAIContent(om.Content, true)
		if err != nil {
			return err
		}
		r.Messages = append(r.Messages, Message{Role: RoleUser, Parts: parts, Name: om.Name})
	case "assistant":
		parts, err := openAIContent(om.Content, false)
		if err != nil {
			return err
		}
		if om.Refusal != nil {
			raw, _ := json.Marshal(kv("refusal", *om.Refusal))
			parts = append(parts, Part{Type: PartOther, Other: &Other{Dialect: openAIName, Type: "refusal", Raw: raw}})
		}
		for _, c := range om.ToolCalls {
			if c.Type != "function" {
				return notInModel(openAIDisplay, "tool call of type %q", c.Type)
			}
			args := ""
			if c.Function.Arguments != nil {
				args = *c.Function.Arguments
			}
			parts = append(parts, Part{Type: PartToolCall,
				ToolCall: &ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(args)}})
		}
		r.Messages = append(r.Messages, Message{Role: RoleAssistant, Parts: parts, Name: om.Name})
	case "tool":
		parts, err := openAIContent(om.Content, false)
		if err != nil {
			return err
		}
		if om.ToolCallID == "" {
			return malformedf(openAIDisplay, "request", "a tool message without tool_call_id")
		}
		tr := Part{Type: PartToolResult, ToolResult: &ToolResult{CallID: om.ToolCallID, Content: parts}}
		if n := len(r.Messages); n > 0 && r.toolTurn {
			r.Messages[n-1].Parts = append(r.Messages[n-1].Parts, tr) // tool messages in a row are one turn
			return nil
		}
		r.Messages = append(r.Messages, Message{Role: RoleUser, Parts: []Part{tr}})
		r.toolTurn = true
		return nil
	default:
		return notInModel(openAIDisplay, "message role %q", om.Role)
	}
	return nil
}

// openAIContent reads a message's content: a string, or an array of
// parts (images where images may be).
func openAIContent(v json.RawMessage, images bool) ([]Part, error) {
	if isNull(v) {
		return nil, nil
	}
	if isString(v) {
		var s string
		if err := unmarshal(v, &s, "content"); err != nil {
			return nil, malformed(openAIDisplay, "message", err)
		}
		if s == "" {
			return nil, nil
		}
		return []Part{Text(s)}, nil
	}
	var raws []json.RawMessage
	if err := rawsIn(v, &raws, "content"); err != nil {
		return nil, malformed(openAIDisplay, "message", err)
	}
	parts := make([]Part, 0, len(raws))
	for _, raw := range raws {
		var p openAIPartIn
		if !p.readFast(raw) {
			slow := new(openAIPartIn) // p stays on the stack
			if err := json.Unmarshal(raw, slow); err != nil {
				return nil, malformed(openAIDisplay, "content part", err)
			}
			p = *slow
		}
		switch {
		case p.Type == "text":
			parts = append(parts, Text(p.Text))
		case p.Type == "image_url" && images:
			img, err := dataURL(p.ImageURL.URL)
			if err != nil {
				return nil, err
			}
			img.Detail = p.ImageURL.Detail
			parts = append(parts, Part{Type: PartImage, Image: img})
		case p.Type == "input_audio" || p.Type == "file" || p.Type == "refusal":
			var f Feature
			if p.Type == "input_audio" {
				f = FeatureAudio
			}
			parts = append(parts, Part{Type: PartOther, Other: &Other{Dialect: openAIName, Feature: f, Type: p.Type, Raw: raw}})
		default:
			return nil, notInModel(openAIDisplay, "content part of type %q", p.Type)
		}
	}
	return parts, nil
}

// openAIPartIn is a content part as openAIContent reads it.
type openAIPartIn struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL struct {
		URL    string `json:"url"`
		Detail string `json:"detail"`
	} `json:"image_url"`
}

// openAIPartNames are the members of a content part openAIPartIn reads.
var openAIPartNames = []string{"type", "text", "image_url"}

// readFast reads the part raw, a part of a text already checked, as
// json.Unmarshal reads it into p, in one walk; false, p half read, where
// it gives way to encoding/json (fieldsIn, unmarshalFast).
func (p *openAIPartIn) readFast(raw []byte) bool {
	return fieldsIn(raw, openAIPartNames, func(i int, v []byte) bool {
		switch i {
		case 0:
			return unmarshalFast(v, &p.Type)
		case 1:
			return unmarshalFast(v, &p.Text)
		}
		if string(v) == "null" {
			return true
		}
		return fieldsIn(v, openAIImageNames, func(i int, v []byte) bool {
			if i == 0 {
				return unmarshalFast(v, &p.ImageURL.URL)
			}
			return unmarshalFast(v, &p.ImageURL.Detail)
		})
	})
}

// openAIImageNames are the members of a part's image_url that
// openAIPartIn reads.
var openAIImageNames = []string{"url", "detail"}

// dataURL reads an image URL: a data: URL is the image's bytes.
func dataURL(u string) (*Image, error) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return &Image{URL: u}, nil
	}
	mt, data, ok := strings.Cut(rest, ";base64,")
	if !ok || mt == "" {
		return nil, malformedf(openAIDisplay, "image", "a data: URL that is not base64 with a media type")
	}
	return &Image{MediaType: mt, Data: data}, nil
}

// openAIToolIn is a tool as OpenAI writes it.
type openAIToolIn struct {
	Type     string            `json:"type"`
	Function *openAIFunctionIn `json:"function"`
}

// openAIFunctionIn is a tool's function.
type openAIFunctionIn struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

var (
	openAIToolNames     = []string{"type", "function"}
	openAIFunctionNames = []string{"name", "description", "parameters", "strict"}
)

// readFast reads the tool v, a part of a text already checked, into t as
// json.Unmarshal would; false when v is not of the shapes it reads.
func (t *openAIToolIn) readFast(v []byte) bool {
	*t = openAIToolIn{}
	return fieldsIn(v, openAIToolNames, func(i int, v []byte) bool {
		if i == 0 {
			return readString(v, &t.Type)
		}
		if string(v) == "null" {
			t.Function = nil
			return true
		}
		f := new(openAIFunctionIn)
		t.Function = f
		return fieldsIn(v, openAIFunctionNames, func(i int, v []byte) bool {
			switch i {
			case 0:
				return readString(v, &f.Name)
			case 1:
				return readString(v, &f.Description)
			case 2:
				f.Parameters = json.RawMessage(v)
				return true
			}
			switch string(v) {
			case "null":
				f.Strict = nil
			case "true", "false":
				b := string(v) == "true"
				f.Strict = &b
			default:
				return false
			}
			return true
		})
	})
}

func openAITools(r *Request, v json.RawMessage) error {
	var raws []json.RawMessage
	if err := rawsIn(v, &raws, "tools"); err != nil {
		return err
	}
	for _, raw := range raws {
		var t openAIToolIn
		if !t.readFast(raw) {
			if err := unmarshalFresh(raw, &t); err != nil {
				return malformed(openAIDisplay, "tool", err)
			}
		}
		if t.Type != "function" || t.Function == nil {
			r.Extras = append(r.Extras, Extra{Feature: FeatureBuiltinTool, Dialect: openAIName, Name: t.Type, Value: raw})
			continue
		}
		f := t.Function
		if isNull(f.Parameters) {
			f.Parameters = nil
		}
		r.Tools = append(r.Tools, Tool{Name: f.Name, Description: f.Description, Parameters: f.Parameters, Strict: f.Strict})
	}
	return nil
}

func openAIToolChoice(v json.RawMessage) (ToolChoice, error) {
	if isString(v) {
		var s string
		if err := unmarshal(v, &s, "tool_choice"); err != nil {
			return ToolChoice{}, err
		}
		switch s {
		case "auto":
			return ToolChoice{Mode: ToolAuto}, nil
		case "none":
			return ToolChoice{Mode: ToolNone}, nil
		case "required":
			return ToolChoice{Mode: ToolRequired}, nil
		}
		return ToolChoice{}, notInModel(openAIDisplay, "tool_choice %q", s)
	}
	var c struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := unmarshal(v, &c, "tool_choice"); err != nil {
		return ToolChoice{}, err
	}
	if c.Type != "function" || c.Function.Name == "" {
		return ToolChoice{}, notInModel(openAIDisplay, "tool_choice of type %q", c.Type)
	}
	return ToolChoice{Mode: ToolNamed, Name: c.Function.Name}, nil
}

func openAIFormat(v json.RawMessage) (*Format, error) {
	var f struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
			Strict      *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := unmarshal(v, &f, "response_format"); err != nil {
		return nil, err
	}
	switch f.Type {
	case "text":
		return &Format{Type: FormatText}, nil
	case "json_object":
		return &Format{Type: FormatJSONObject}, nil
	case "json_schema":
		if f.JSONSchema == nil {
			return nil, malformedf(openAIDisplay, "request", "response_format json_schema without json_schema")
		}
		s := f.JSONSchema
		return &Format{Type: FormatJSONSchema, Name: s.Name, Description: s.Description, Schema: s.Schema, Strict: s.Strict}, nil
	}
	return nil, notInModel(openAIDisplay, "response_format of type %q", f.Type)
}

// Encoding a request.

// openAIDefaultSchemaName names a JSON schema that came without a name,
// which OpenAI requires.
const openAIDefaultSchemaName = "response"

func (openAICodec) EncodeRequest(r *Request) ([]byte, error) {
	o := &object{}
	if r.Model != "" {
		o.set("model", r.Model)
	}
	msgs, err := openAIMessagesOut(r)
	if err != nil {
		return nil, err
	}
	o.set("messages", msgs)
	var tools []any
	for _, t := range r.Tools {
		f := &object{}
		f.set("name", t.Name)
		if t.Description != "" {
			f.set("description", t.Description)
		}
		if t.Parameters != nil {
			f.set("parameters", t.Parameters)
		}
		if t.Strict != nil {
			f.set("strict", *t.Strict)
		}
		tools = append(tools, kv("type", "function", "function", f))
	}
	extras := &object{}
	if err := writeExtras(openAIName, r, extras, &tools); err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		o.set("tools", tools)
	}
	switch r.ToolChoice.Mode {
	case "":
	case ToolAuto, ToolNone, ToolRequired:
		o.set("tool_choice", string(r.ToolChoice.Mode))
	case ToolNamed:
		o.set("tool_choice", kv("type", "function", "function", kv("name", r.ToolChoice.Name)))
	}
	if r.ParallelToolCalls != nil {
		o.set("parallel_tool_calls", *r.ParallelToolCalls)
	}
	if f := r.Format; f != nil {
		switch f.Type {
		case FormatText, FormatJSONObject:
			o.set("response_format", kv("type", string(f.Type)))
		case FormatJSONSchema:
			s := &object{}
			s.set("name", cmp.Or(f.Name, openAIDefaultSchemaName))
			if f.Description != "" {
				s.set("description", f.Description)
			}
			s.set("schema", f.Schema)
			if f.Strict != nil {
				s.set("strict", *f.Strict)
			}
			o.set("response_format", kv("type", "json_schema", "json_schema", s))
		}
	}
	if len(r.Stop) > 0 {
		o.set("stop", r.Stop)
	}
	if r.Temperature != nil {
		o.set("temperature", *r.Temperature)
	}
	if r.TopP != nil {
		o.set("top_p", *r.TopP)
	}
	if r.TopK != nil {
		return nil, cannot(openAIDisplay, "top_k")
	}
	if r.MaxTokens > 0 {
		o.set("max_completion_tokens", r.MaxTokens)
	}
	if r.Seed != nil {
		o.set("seed", *r.Seed)
	}
	if r.PresencePenalty != nil {
		o.set("presence_penalty", *r.PresencePenalty)
	}
	if r.FrequencyPenalty != nil {
		o.set("frequency_penalty", *r.FrequencyPenalty)
	}
	if r.User != "" {
		o.set("user", r.User)
	}
	if r.N != 0 {
		o.set("n", r.N)
	}
	if r.Stream {
		o.set("stream", true)
		if r.IncludeUsage {
			o.obj("stream_options").set("include_usage", true)
		}
	}
	mergeExtras(o, extras)
	return o.bytes()
}

func openAIMessagesOut(r *Request) ([]any, error) {
	var out []any
	if len(r.System) > 0 {
		c, err := openAIContentOut(r.System, false, "in the system prompt")
		if err != nil {
			return nil, err
		}
		out = append(out, kv("role", "system", "content", c))
	}
	for _, m := range r.Messages {
		switch m.Role {
		case RoleSystem:
			c, err := openAIContentOut(m.Parts, false, "in a system message")
			if err != nil {
				return nil, err
			}
			out = append(out, openAINamed(m, kv("role", "system", "content", c)))
		case RoleUser:
			var rest []Part
			for _, p := range m.Parts {
				if p.Type != PartToolResult {
					rest = append(rest, p)
					continue
				}
				tr := p.ToolResult
				c, err := openAIContentOut(tr.Content, false, "in a tool result")
				if err != nil {
					return nil, err
				}
				if tr.IsError && c == "" {
					c = "error"
				}
				out = append(out, kv("role", "tool", "tool_call_id", tr.CallID, "content", c))
			}
			if len(rest) == 0 && len(m.Parts) > 0 {
				continue
			}
			c, err := openAIContentOut(rest, true, "in a user message")
			if err != nil {
				return nil, err
			}
			out = append(out, openAINamed(m, kv("role", "user", "content", c)))
		case RoleAssistant:
			msg, err := openAIAssistantOut(m)
			if err != nil {
				return nil, err
			}
			out = append(out, msg)
		default:
			return nil, cannot(openAIDisplay, "a message of role %q", m.Role)
		}
	}
	return out, nil
}

func openAINamed(m Message, msg *object) *object {
	if m.Name != "" {
		msg.set("name", m.Name)
	}
	return msg
}

func openAIAssistantOut(m Message) (any, error) {
	o := &object{}
	o.set("role", "assistant")
	var text []Part
	var calls []any
	for _, p := range m.Parts {
		switch p.Type {
		case PartText:
			text = append(text, p)
		case PartToolCall:
			c := p.ToolCall
			calls = append(calls, kv("id", c.ID, "type", "function", "function", kv("name", c.Name, "arguments", string(c.Args))))
		case PartOther:
			if p.Other.Dialect != openAIName || p.Other.Type != "refusal" {
				return nil, cannot(openAIDisplay, "%s in an assistant message", otherName(p.Other))
			}
			var v struct {
				Refusal string `json:"refusal"`
			}
			json.Unmarshal(p.Other.Raw, &v)
			o.set("refusal", v.Refusal)
		default:
			return nil, cannot(openAIDisplay, "%s part in an assistant message", p.Type.a())
		}
	}
	switch {
	case len(text) > 0:
		c, err := openAIContentOut(text, false, "in an assistant message")
		if err != nil {
			return nil, err
		}
		o.set("content", c)
	case len(calls) == 0 && !o.has("refusal"):
		o.set("content", "")
	}
	if m.Name != "" {
		o.set("name", m.Name)
	}
	if len(calls) > 0 {
		o.set("tool_calls", calls)
	}
	return o, nil
}

// openAIContentOut writes a message's content: a string when it is one
// text part, else an array of parts; where says where, for errors.
func openAIContentOut(parts []Part, images bool, where string) (any, error) {
	if len(parts) == 0 {
		return "", nil
	}
	if len(parts) == 1 && parts[0].Type == PartText {
		return parts[0].Text, nil
	}
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch {
		case p.Type == PartText:
			out = append(out, textPart(p.Text))
		case p.Type == PartImage && images:
			u, err := imageURL(openAIDisplay, p.Image)
			if err != nil {
				return nil, err
			}
			iu := kv("url", u)
			if p.Image.Detail != "" {
				iu.set("detail", p.Image.Detail)
			}
			out = append(out, kv("type", "image_url", "image_url", iu))
		case p.Type == PartOther && p.Other.Dialect == openAIName:
			out = append(out, p.Other.Raw)
		case p.Type == PartOther:
			return nil, cannot(openAIDisplay, "%s", otherName(p.Other))
		default:
			return nil, cannot(openAIDisplay, "%s part %s", p.Type.a(), where)
		}
	}
	return out, nil
}

// imageURL returns an image's URL, a data: URL for its bytes.
func imageURL(dialect string, img *Image) (string, error) {
	if img.URL != "" {
		return img.URL, nil
	}
	if img.MediaType == "" {
		return "", cannot(dialect, "an image without a media type")
	}
	return "data:" + img.MediaType + ";base64," + img.Data, nil
}
