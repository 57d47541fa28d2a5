package chat

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/sluice-llm/sluice/internal/request"
)

// Anthropic is Anthropic's Messages API (/v1/messages).
//
// How it maps:
//   - the top-level system is the System prompt, a string or text blocks
//     with their cache_control;
//   - max_tokens is required: a request without MaxTokens cannot be
//     written (a caller sets one first);
//   - the encoder makes a valid conversation: messages of one role in a
//     row are one turn, a turn's tool_result blocks come first, every
//     tool_result answers a tool_use of the turn before, empty text is
//     left out;
//   - tool_choice none, auto, any (ToolRequired) and tool; a
//     ParallelToolCalls of false is disable_parallel_tool_use;
//   - a JSON schema is output_config.format; its name and description
//     are not carried (Anthropic's format has none), and a JSON object
//     without a schema cannot be asked for;
//   - temperature is 0 to 1;
//   - stop_reason refusal is StopContentFilter,
//     model_context_window_exceeded StopMaxTokens;
//   - usage: input_tokens leaves out the cached tokens, as Usage.Input
//     does.
var Anthropic Codec = anthropicCodec{}

type anthropicCodec struct{}

const anthropicDisplay = "Anthropic"

func (anthropicCodec) Name() string { return anthropicName }

// anthropicExtras are the members of a request the model has no field
// for, by what they ask; the rest are FeatureOther.
var anthropicExtras = map[string]Feature{
	"thinking": FeatureThinking, "mcp_servers": FeatureBuiltinTool, "container": FeatureBuiltinTool,
}

// anthropicAdvisory are the members that do not change the answer.
var anthropicAdvisory = map[string]bool{"service_tier": true, "metadata": true}

func (anthropicCodec) DecodeRequest(body []byte) (*Request, error) {
	ms, err := members(body)
	if err != nil {
		return nil, malformed(anthropicDisplay, "request", err)
	}
	r := &Request{}
	for _, m := range ms {
		if isNull(m.Value) {
			continue
		}
		var err error
		switch m.Key {
		case "model":
			err = unmarshal(m.Value, &r.Model, m.Key)
		case "max_tokens":
			err = unmarshal(m.Value, &r.MaxTokens, m.Key)
		case "system":
			r.System, err = anthropicSystem(m.Value)
		case "messages":
			err = anthropicMessages(r, m.Value)
		case "tools":
			err = anthropicTools(r, m.Value)
		case "tool_choice":
			err = anthropicToolChoice(r, m.Value)
		case "stop_sequences":
			err = unmarshal(m.Value, &r.Stop, m.Key)
		case "temperature":
			err = unmarshal(m.Value, &r.Temperature, m.Key)
		case "top_p":
			err = unmarshal(m.Value, &r.TopP, m.Key)
		case "top_k":
			err = unmarshal(m.Value, &r.TopK, m.Key)
		case "stream":
			err = unmarshal(m.Value, &r.Stream, m.Key)
		case "metadata":
			err = anthropicMetadata(r, m.Value)
		case "output_config":
			err = anthropicOutputConfig(r, m.Value)
		default:
			f, ok := anthropicExtras[m.Key]
			if !ok {
				f = FeatureOther
			}
			r.Extras = append(r.Extras, Extra{Feature: f, Dialect: anthropicName, Name: m.Key, Value: m.Value,
				Advisory: anthropicAdvisory[m.Key]})
		}
		if err != nil {
			return nil, malformed(anthropicDisplay, "request", err)
		}
	}
	if r.MaxTokens < 0 {
		return nil, malformedf(anthropicDisplay, "request", "a negative max_tokens")
	}
	dropEmptyText(r)
	return r, nil
}

func anthropicMetadata(r *Request, v json.RawMessage) error {
	ms, err := members(v)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Key == "user_id" && !isNull(m.Value) {
			if err := unmarshal(m.Value, &r.User, "metadata.user_id"); err != nil {
				return err
			}
			continue
		}
		r.Extras = append(r.Extras, Extra{Feature: FeatureOther, Dialect: anthropicName, In: "metadata", Name: m.Key,
			Value: m.Value, Advisory: true})
	}
	return nil
}

func anthropicOutputConfig(r *Request, v json.RawMessage) error {
	ms, err := members(v)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Key != "format" {
			f := FeatureOther
			if m.Key == "effort" {
				f = FeatureThinking
			}
			r.Extras = append(r.Extras, Extra{Feature: f, Dialect: anthropicName, In: "output_config", Name: m.Key, Value: m.Value})
			continue
		}
		if isNull(m.Value) {
			continue
		}
		var f struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		}
		if err := unmarshal(m.Value, &f, "output_config.format"); err != nil {
			return err
		}
		if f.Type != "json_schema" {
			return notInModel(anthropicDisplay, "output_config.format of type %q", f.Type)
		}
		r.Format = &Format{Type: FormatJSONSchema, Schema: f.Schema}
	}
	return nil
}

// anthropicCache reads a block's cache_control.
func anthropicCache(v json.RawMessage) (*Cache, error) {
	if isNull(v) {
		return nil, nil
	}
	var c struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	if err := unmarshal(v, &c, "cache_control"); err != nil {
		return nil, err
	}
	if c.Type != "ephemeral" {
		return nil, notInModel(anthropicDisplay, "cache_control of type %q", c.Type)
	}
	return &Cache{TTL: c.TTL}, nil
}

func anthropicSystem(v json.RawMessage) ([]Part, error) {
	if isString(v) {
		var s string
		if err := unmarshal(v, &s, "system"); err != nil {
			return nil, err
		}
		if s == "" {
			return nil, nil
		}
		return []Part{Text(s)}, nil
	}
	parts, err := anthropicBlocks(v, "system")
	if err != nil {
		return nil, err
	}
	for _, p := range parts {
		if p.Type != PartText {
			return nil, notInModel(anthropicDisplay, "system block of type %s", p.Type)
		}
	}
	return parts, nil
}

func anthropicMessages(r *Request, v json.RawMessage) error {
	var msgs []anthropicMessageIn
	if !readAnthropicMessages(v, &msgs) {
		if err := unmarshal(v, &msgs, "messages"); err != nil {
			return err
		}
	}
	for _, m := range msgs {
		var role Role
		switch m.Role {
		case "user":
			role = RoleUser
		case "assistant":
			role = RoleAssistant
		default:
			return notInModel(anthropicDisplay, "message role %q", m.Role)
		}
		var parts []Part
		if isString(m.Content) {
			var s string
			if err := unmarshal(m.Content, &s, "content"); err != nil {
				return err
			}
			parts = []Part{Text(s)}
		} else {
			var err error
			if parts, err = anthropicBlocks(m.Content, "content"); err != nil {
				return err
			}
		}
		r.Messages = append(r.Messages, Message{Role: role, Parts: parts})
	}
	return nil
}

// anthropicMessageIn is a message of a request, as anthropicMessages
// reads it.
type anthropicMessageIn struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// anthropicMessageInNames are the members anthropicMessageIn reads.
var anthropicMessageInNames = []string{"role", "content"}

// readAnthropicMessages reads the array of messages v, a part of a text
// already checked and this read's own copy (a request's member), into p
// as json.Unmarshal would; false, p half read, where it gives way to
// encoding/json (fieldsIn, unmarshalFast).
func readAnthropicMessages(v []byte, p *[]anthropicMessageIn) bool {
	raws, ok := elementsOwned(v)
	if !ok {
		return false
	}
	msgs := make([]anthropicMessageIn, len(raws))
	for i, raw := range raws {
		m := &msgs[i]
		if !fieldsIn(raw, anthropicMessageInNames, func(i int, v []byte) bool {
			if i == 0 {
				return unmarshalFast(v, &m.Role)
			}
			m.Content = v // null too, as a json.RawMessage reads it
			return true
		}) {
			return false
		}
	}
	*p = msgs
	return true
}

// anthropicBlockKeys are the members of each block type the model
// carries; a block with any other is kept whole, as an Other.
var anthropicBlockKeys = map[string][]string{
	"text":        {"type", "text", "cache_control"},
	"image":       {"type", "source", "cache_control"},
	"tool_use":    {"type", "id", "name", "input", "cache_control"},
	"tool_result": {"type", "tool_use_id", "content", "is_error", "cache_control"},
}

// anthropicOtherFeatures say what the blocks only Anthropic knows ask.
var anthropicOtherFeatures = map[string]Feature{
	"thinking": FeatureThinking, "redacted_thinking": FeatureThinking,
	"server_tool_use": FeatureBuiltinTool, "web_search_tool_result": FeatureBuiltinTool,
	"web_fetch_tool_result": FeatureBuiltinTool, "code_execution_tool_result": FeatureBuiltinTool,
	"mcp_tool_use": FeatureBuiltinTool, "mcp_tool_result": FeatureBuiltinTool,
}

// anthropicBlocks reads an array of content blocks.
func anthropicBlocks(v json.RawMessage, what string) ([]Part, error) {
	var raws []json.RawMessage
	if err := rawsIn(v, &raws, what); err != nil {
		return nil, err
	}
	parts := make([]Part, 0, len(raws))
	for _, raw := range raws {
		p, err := anthropicBlock(raw)
		if err != nil {
			return nil, err
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// anthropicBlockIn is a content block as anthropicBlock reads it.
type anthropicBlockIn struct {
	Text         string          `json:"text"`
	Source       json.RawMessage `json:"source"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	IsError      bool            `json:"is_error"`
	CacheControl json.RawMessage `json:"cache_control"`
}

// anthropicBlockFields are the members anthropicBlockIn reads, by the
// bit readFast gives each; anthropicBlockAllows, those of each block
// type the model carries, as bits.
var (
	anthropicBlockFields = []string{"type", "text", "source", "id", "name", "input", "tool_use_id", "content",
		"is_error", "cache_control"}
	anthropicBlockAllows = func() map[string]uint16 {
		allows := map[string]uint16{}
		for typ, keys := range anthropicBlockKeys {
			for _, k := range keys {
				allows[typ] |= 1 << slices.Index(anthropicBlockFields, k)
			}
		}
		return allows
	}()
)

// readFast reads the block raw, a part of a text already checked, into b
// in one walk, as json.Unmarshal would, and returns its type and the
// members it gives a value other than null, as bits of
// anthropicBlockFields. It is false, b half read, when a member is none
// of those fields, is given twice, or is not plain (unmarshalFast), and
// when raw is no object.
func (b *anthropicBlockIn) readFast(raw []byte) (typ string, given uint16, ok bool) {
	if raw = bytes.TrimLeft(raw, " \t\r\n"); len(raw) == 0 || raw[0] != '{' {
		return "", 0, false // no object: the read by members says so
	}
	var r blockRead
	ok = request.Members(raw, func(k, v []byte) bool { return r.member(b, k, v) })
	return r.typ, r.given, ok
}

// blockRead is where a fast read of a block stands: its type, and the
// members seen and given a value other than null (bits of
// anthropicBlockFields).
type blockRead struct {
	typ         string
	seen, given uint16
}

// member reads the member k: v of a block into b, as readFast does; false
// when it cannot.
func (r *blockRead) member(b *anthropicBlockIn, k, v []byte) bool {
	i := slices.Index(anthropicBlockFields, string(k))
	if i < 0 || r.seen&(1<<i) != 0 {
		return false
	}
	r.seen |= 1 << i
	if string(v) != "null" {
		r.given |= 1 << i
	}
	switch i {
	case 0:
		return unmarshalFast(v, &r.typ)
	case 1:
		return unmarshalFast(v, &b.Text)
	case 2:
		b.Source = v
	case 3:
		return unmarshalFast(v, &b.ID)
	case 4:
		return unmarshalFast(v, &b.Name)
	case 5:
		b.Input = v
	case 6:
		return unmarshalFast(v, &b.ToolUseID)
	case 7:
		b.Content = v
	case 8:
		return unmarshalFast(v, &b.IsError)
	case 9:
		b.CacheControl = v
	}
	return true
}

func anthropicBlock(raw json.RawMessage) (Part, error) {
	var b anthropicBlockIn
	typ, given, fast := b.readFast(raw)
	return b.part(raw, typ, given, fast)
}

// part is the block raw, b as readFast left it: read fast when fast,
// else read again by encoding/json.
func (b anthropicBlockIn) part(raw json.RawMessage, typ string, given uint16, fast bool) (Part, error) {
	allows, ok := anthropicBlockAllows[typ]
	if !fast {
		ms, err := membersOwned(raw)
		if err != nil {
			return Part{}, malformed(anthropicDisplay, "content block", err)
		}
		var t string // typ stays on the stack: encoding/json's read takes t
		for _, m := range ms {
			if m.Key == "type" {
				unmarshalString(m.Value, &t)
			}
		}
		typ = t
		keys, known := anthropicBlockKeys[typ]
		ok = known
		for _, m := range ms {
			ok = ok && (slices.Contains(keys, m.Key) || isNull(m.Value))
		}
		if ok { // where readFast gives way, so would any other fast read
			if err := unmarshalFresh(raw, &b); err != nil {
				return Part{}, malformed(anthropicDisplay, typ+" block", err)
			}
		}
	} else {
		ok = ok && given&^allows == 0
	}
	if !ok {
		return Part{Type: PartOther, Other: &Other{Dialect: anthropicName, Feature: anthropicOtherFeatures[typ], Type: typ,
			Raw: raw}}, nil
	}
	cache, err := anthropicCache(b.CacheControl)
	if err != nil {
		return Part{}, err
	}
	p := Part{Cache: cache}
	switch typ {
	case "text":
		p.Type, p.Text = PartText, b.Text
	case "image":
		img, err := anthropicImage(b.Source)
		if err != nil {
			return Part{}, err
		}
		if img == nil {
			return Part{Type: PartOther, Other: &Other{Dialect: anthropicName, Type: "image", Raw: raw}}, nil
		}
		p.Type, p.Image = PartImage, img
	case "tool_use":
		if isNull(b.Input) {
			b.Input = json.RawMessage("{}")
		}
		p.Type, p.ToolCall = PartToolCall, &ToolCall{ID: b.ID, Name: b.Name, Args: b.Input}
	case "tool_result":
		tr := &ToolResult{CallID: b.ToolUseID, IsError: b.IsError}
		switch {
		case isNull(b.Content):
		case isString(b.Content):
			var s string
			unmarshalString(b.Content, &s)
			if s != "" {
				tr.Content = []Part{Text(s)}
			}
		default:
			if tr.Content, err = anthropicBlocks(b.Content, "tool_result content"); err != nil {
				return Part{}, err
			}
			for _, c := range tr.Content {
				if c.Type != PartText && c.Type != PartImage {
					return Part{Type: PartOther, Other: &Other{Dialect: anthropicName, Type: "tool_result", Raw: raw}}, nil
				}
			}
		}
		p.Type, p.ToolResult = PartToolResult, tr
	}
	return p, nil
}

// anthropicImage reads an image block's source; nil for a source the
// model does not carry (a file id).
func anthropicImage(v json.RawMessage) (*Image, error) {
	var s struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	}
	if err := unmarshal(v, &s, "source"); err != nil {
		return nil, err
	}
	switch s.Type {
	case "base64":
		return &Image{MediaType: s.MediaType, Data: s.Data}, nil
	case "url":
		return &Image{URL: s.URL}, nil
	}
	return nil, nil
}

func anthropicTools(r *Request, v json.RawMessage) error {
	var raws []json.RawMessage
	if err := rawsIn(v, &raws, "tools"); err != nil {
		return err
	}
	for _, raw := range raws {
		ms, err := members(raw)
		if err != nil {
			return malformed(anthropicDisplay, "tool", err)
		}
		var t struct {
			Type         string          `json:"type"`
			Name         string          `json:"name"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"input_schema"`
			Strict       *bool           `json:"strict"`
			CacheControl json.RawMessage `json:"cache_control"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return malformed(anthropicDisplay, "tool", err)
		}
		if t.Type != "" && t.Type != "custom" {
			r.Extras = append(r.Extras, Extra{Feature: FeatureBuiltinTool, Dialect: anthropicName, Name: t.Type, Value: raw})
			continue
		}
		for _, m := range ms {
			switch m.Key {
			case "type", "name", "description", "input_schema", "strict", "cache_control":
			default:
				return notInModel(anthropicDisplay, "tool member %q", m.Key)
			}
		}
		cache, err := anthropicCache(t.CacheControl)
		if err != nil {
			return err
		}
		if isNull(t.InputSchema) {
			t.InputSchema = nil
		}
		r.Tools = append(r.Tools, Tool{Name: t.Name, Description: t.Description, Parameters: t.InputSchema,
			Strict: t.Strict, Cache: cache})
	}
	return nil
}

func anthropicToolChoice(r *Request, v json.RawMessage) error {
	var c struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse bool   `json:"disable_parallel_tool_use"`
	}
	if err := unmarshal(v, &c, "tool_choice"); err != nil {
		return err
	}
	switch c.Type {
	case "auto":
		r.ToolChoice = ToolChoice{Mode: ToolAuto}
	case "any":
		r.ToolChoice = ToolChoice{Mode: ToolRequired}
	case "none":
		r.ToolChoice = ToolChoice{Mode: ToolNone}
	case "tool":
		r.ToolChoice = ToolChoice{Mode: ToolNamed, Name: c.Name}
	default:
		return notInModel(anthropicDisplay, "tool_choice of type %q", c.Type)
	}
	if c.DisableParallelToolUse {
		f := false
		r.ParallelToolCalls = &f
	}
	return nil
}

// Encoding a request.

// anthropicMediaTypes are the image types Anthropic takes.
var anthropicMediaTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

func (anthropicCodec) EncodeRequest(r *Request) ([]byte, error) {
	if r.MaxTokens <= 0 {
		return nil, cannot(anthropicDisplay, "a request without max_tokens (it requires one)")
	}
	switch {
	case r.N > 1:
		return nil, cannot(anthropicDisplay, "n %d (one answer only)", r.N)
	case r.Seed != nil:
		return nil, cannot(anthropicDisplay, "seed")
	case r.PresencePenalty != nil:
		return nil, cannot(anthropicDisplay, "presence_penalty")
	case r.FrequencyPenalty != nil:
		return nil, cannot(anthropicDisplay, "frequency_penalty")
	case r.Temperature != nil && (*r.Temperature < 0 || *r.Temperature > 1):
		return nil, cannot(anthropicDisplay, "temperature %g (it takes 0 to 1)", *r.Temperature)
	}
	o := &object{}
	if r.Model != "" {
		o.set("model", r.Model)
	}
	o.set("max_tokens", r.MaxTokens)
	if len(r.System) > 0 {
		sys, err := anthropicSystemOut(r.System)
		if err != nil {
			return nil, err
		}
		o.set("system", sys)
	}
	msgs, err := anthropicMessagesOut(r.Messages)
	if err != nil {
		return nil, err
	}
	o.set("messages", msgs)
	var tools []any
	for _, t := range r.Tools {
		to := &object{}
		to.set("name", t.Name)
		if t.Description != "" {
			to.set("description", t.Description)
		}
		schema := t.Parameters
		if schema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		to.set("input_schema", schema)
		if t.Strict != nil {
			to.set("strict", *t.Strict)
		}
		if t.Cache != nil {
			to.set("cache_control", anthropicCacheOut(t.Cache))
		}
		tools = append(tools, to)
	}
	extras := &object{}
	if err := writeExtras(anthropicName, r, extras, &tools); err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		o.set("tools", tools)
	}
	if tc := anthropicToolChoiceOut(r); tc != nil {
		o.set("tool_choice", tc)
	}
	if len(r.Stop) > 0 {
		o.set("stop_sequences", r.Stop)
	}
	if r.Temperature != nil {
		o.set("temperature", *r.Temperature)
	}
	if r.TopP != nil {
		o.set("top_p", *r.TopP)
	}
	if r.TopK != nil {
		o.set("top_k", *r.TopK)
	}
	if r.User != "" {
		o.obj("metadata").set("user_id", r.User)
	}
	if r.Stream {
		o.set("stream", true)
	}
	if f := r.Format; f != nil {
		switch f.Type {
		case FormatJSONObject:
			return nil, cannot(anthropicDisplay, "response format json_object (a JSON schema only)")
		case FormatJSONSchema:
			o.obj("output_config").set("format", kv("type", "json_schema", "schema", f.Schema))
		}
	}
	mergeExtras(o, extras)
	return o.bytes()
}

func anthropicToolChoiceOut(r *Request) any {
	if r.ToolChoice.Mode == "" && (r.ParallelToolCalls == nil || *r.ParallelToolCalls) {
		return nil
	}
	tc := &object{}
	switch r.ToolChoice.Mode {
	case "":
		tc.set("type", "auto")
	case ToolAuto, ToolNone:
		tc.set("type", string(r.ToolChoice.Mode))
	case ToolRequired:
		tc.set("type", "any")
	case ToolNamed:
		tc.set("type", "tool")
		tc.set("name", r.ToolChoice.Name)
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls && r.ToolChoice.Mode != ToolNone {
		tc.set("disable_parallel_tool_use", true)
	}
	return tc
}

func anthropicCacheOut(c *Cache) *object {
	m := kv("type", "ephemeral")
	if c.TTL != "" {
		m.set("ttl", c.TTL)
	}
	return m
}

func anthropicSystemOut(parts []Part) (any, error) {
	if len(parts) == 1 && parts[0].Type == PartText && parts[0].Cache == nil {
		return parts[0].Text, nil
	}
	var out []any
	for _, p := range parts {
		if p.Type != PartText {
			return nil, cannot(anthropicDisplay, "%s part in the system prompt", p.Type.a())
		}
		b, err := anthropicBlockOut(p)
		if err != nil {
			return nil, err
		}
		if b != nil {
			out = append(out, b)
		}
	}
	return out, nil
}

// anthropicMessagesOut writes the conversation as Anthropic takes it
// (mergeTurns).
func anthropicMessagesOut(msgs []Message) ([]any, error) {
	turns, err := mergeTurns(anthropicName, msgs)
	if err != nil {
		return nil, err
	}
	out := make([]any, 0, len(turns))
	for _, t := range turns {
		blocks := make([]any, 0, len(t.Parts))
		for _, p := range t.Parts {
			b, err := anthropicBlockOut(p)
			if err != nil {
				return nil, err
			}
			if b != nil {
				blocks = append(blocks, b)
			}
		}
		out = append(out, kv("role", string(t.Role), "content", blocks))
	}
	return out, nil
}

// anthropicBlockOut writes a part as a content block; nil for empty text,
// which Anthropic refuses and which says nothing.
func anthropicBlockOut(p Part) (any, error) {
	o := &object{}
	switch p.Type {
	case PartText:
		if p.Text == "" {
			return nil, nil
		}
		if p.Cache == nil {
			return textPart(p.Text), nil
		}
		o.set("type", "text")
		o.set("text", p.Text)
	case PartImage:
		img := p.Image
		o.set("type", "image")
		switch {
		case img.Detail != "" && img.Detail != "auto":
			return nil, cannot(anthropicDisplay, "image detail %q", img.Detail)
		case img.URL != "":
			o.set("source", kv("type", "url", "url", img.URL))
		case !slices.Contains(anthropicMediaTypes, img.MediaType):
			return nil, cannot(anthropicDisplay, "an image of type %q", img.MediaType)
		default:
			o.set("source", kv("type", "base64", "media_type", img.MediaType, "data", img.Data))
		}
	case PartToolCall:
		c := p.ToolCall
		if err := checkToolID(anthropicName, c.ID); err != nil {
			return nil, err
		}
		args, err := argsObject(anthropicName, c)
		if err != nil {
			return nil, err
		}
		o.set("type", "tool_use")
		o.set("id", c.ID)
		o.set("name", c.Name)
		o.set("input", args)
	case PartToolResult:
		tr := p.ToolResult
		if err := checkToolID(anthropicName, tr.CallID); err != nil {
			return nil, err
		}
		o.set("type", "tool_result")
		o.set("tool_use_id", tr.CallID)
		if s, ok := textOnly(tr.Content, ""); ok && len(tr.Content) <= 1 {
			if s != "" {
				o.set("content", s)
			}
		} else {
			var content []any
			for _, c := range tr.Content {
				if c.Type != PartText && c.Type != PartImage {
					return nil, cannot(anthropicDisplay, "%s part in a tool result", c.Type.a())
				}
				b, err := anthropicBlockOut(c)
				if err != nil {
					return nil, err
				}
				if b != nil {
					content = append(content, b)
				}
			}
			o.set("content", content)
		}
		if tr.IsError {
			o.set("is_error", true)
		}
	case PartOther:
		if p.Other.Dialect != anthropicName {
			return nil, cannot(anthropicDisplay, "%s", otherName(p.Other))
		}
		return p.Other.Raw, nil
	default:
		return nil, cannot(anthropicDisplay, "a part of type %s", p.Type)
	}
	if p.Cache != nil {
		o.set("cache_control", anthropicCacheOut(p.Cache))
	}
	return o, nil
}
