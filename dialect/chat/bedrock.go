package chat

import (
	"encoding/json"
	"strings"
)

// Bedrock is Amazon Bedrock's Converse API (POST /model/{modelId}/converse
// and /converse-stream). The model and the stream are in the path: the
// decoders leave Request.Model and Request.Stream as they are and the
// encoders do not write them.
//
// How it maps:
//   - system is the System prompt, its cachePoint blocks the cache
//     breakpoints of the parts before them (of content blocks and tools
//     alike);
//   - the encoder makes one turn per role in a row, tool results first,
//     each answering a toolUse of the turn before (mergeTurns);
//   - inferenceConfig holds maxTokens, temperature, topP and
//     stopSequences; top_k, a seed, penalties, n and a user cannot be
//     written (a model's own fields go in additionalModelRequestFields,
//     which is an extra);
//   - toolConfig: tools as toolSpec with inputSchema.json, toolChoice
//     auto, any (ToolRequired) and tool. Bedrock has no "none": a request
//     that forbids tools is written without its tools, which says the
//     same, unless the conversation holds tool calls (Bedrock then
//     requires the tools);
//   - a JSON schema is outputConfig.textFormat, the schema a string;
//   - an image is its bytes (png, jpeg, gif, webp); Bedrock takes no URL;
//   - a toolResult's json content is read as the text of its JSON; status
//     error is IsError; a tool result of no text but blanks is written
//     as the text NoToolOutput, since Converse refuses a blank text block
//     and some of its models an empty content;
//   - stopReason guardrail_intervened and content_filtered are
//     StopContentFilter, model_context_window_exceeded StopMaxTokens;
//   - usage: inputTokens leaves out the cached tokens, as Usage.Input
//     does.
//
// An error body is {"message": …}; its type travels in the
// x-amzn-ErrorType header, which EncodeError does not set
// (BedrockErrorType names it).
var Bedrock Codec = bedrockCodec{}

// NoToolOutput is the text a tool result that holds nothing (or only
// blanks) is written as for Bedrock's Converse, which refuses it empty.
const NoToolOutput = "(no output)"

type bedrockCodec struct{}

const bedrockDisplay = "Bedrock"

func (bedrockCodec) Name() string { return bedrockName }

// bedrockAdvisory are the members that do not change the answer.
var bedrockAdvisory = map[string]bool{"requestMetadata": true, "performanceConfig": true, "serviceTier": true}

func (bedrockCodec) DecodeRequest(body []byte) (*Request, error) {
	ms, err := members(body)
	if err != nil {
		return nil, malformed(bedrockDisplay, "request", err)
	}
	r := &Request{}
	for _, m := range ms {
		if isNull(m.Value) {
			continue
		}
		var err error
		switch m.Key {
		case "messages":
			err = bedrockMessages(r, m.Value)
		case "system":
			r.System, err = bedrockBlocks(m.Value, "system")
			for _, p := range r.System {
				if err == nil && p.Type != PartText {
					err = notInModel(bedrockDisplay, "system block %s", bedrockPartType(p))
				}
			}
		case "inferenceConfig":
			err = bedrockInference(r, m.Value)
		case "toolConfig":
			err = bedrockTools(r, m.Value)
		case "outputConfig":
			err = bedrockOutputConfig(r, m.Value)
		default:
			r.Extras = append(r.Extras, Extra{Feature: FeatureOther, Dialect: bedrockName, Name: m.Key, Value: m.Value,
				Advisory: bedrockAdvisory[m.Key]})
		}
		if err != nil {
			return nil, malformed(bedrockDisplay, "request", err)
		}
	}
	dropEmptyText(r)
	return r, nil
}

func bedrockInference(r *Request, v json.RawMessage) error {
	ms, err := members(v)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if isNull(m.Value) {
			continue
		}
		var err error
		switch m.Key {
		case "maxTokens":
			err = unmarshal(m.Value, &r.MaxTokens, m.Key)
		case "temperature":
			err = unmarshal(m.Value, &r.Temperature, m.Key)
		case "topP":
			err = unmarshal(m.Value, &r.TopP, m.Key)
		case "stopSequences":
			err = unmarshal(m.Value, &r.Stop, m.Key)
		default:
			return notInModel(bedrockDisplay, "inferenceConfig member %q", m.Key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func bedrockOutputConfig(r *Request, v json.RawMessage) error {
	var c struct {
		TextFormat *struct {
			Type      string `json:"type"`
			Structure struct {
				JSONSchema *struct {
					Schema      string `json:"schema"`
					Name        string `json:"name"`
					Description string `json:"description"`
				} `json:"jsonSchema"`
			} `json:"structure"`
		} `json:"textFormat"`
	}
	if err := unmarshal(v, &c, "outputConfig"); err != nil {
		return err
	}
	tf := c.TextFormat
	if tf == nil {
		return nil
	}
	if tf.Type != "json_schema" || tf.Structure.JSONSchema == nil {
		return notInModel(bedrockDisplay, "outputConfig.textFormat of type %q", tf.Type)
	}
	s := tf.Structure.JSONSchema
	if !json.Valid([]byte(s.Schema)) {
		return malformedf(bedrockDisplay, "request", "outputConfig's schema is not JSON")
	}
	r.Format = &Format{Type: FormatJSONSchema, Name: s.Name, Description: s.Description, Schema: compact(json.RawMessage(s.Schema))}
	return nil
}

func bedrockMessages(r *Request, v json.RawMessage) error {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := unmarshal(v, &msgs, "messages"); err != nil {
		return err
	}
	for _, m := range msgs {
		var role Role
		switch m.Role {
		case "user":
			role = RoleUser
		case "assistant":
			role = RoleAssistant
		default:
			return notInModel(bedrockDisplay, "message role %q", m.Role)
		}
		parts, err := bedrockBlocks(m.Content, "content")
		if err != nil {
			return err
		}
		r.Messages = append(r.Messages, Message{Role: role, Parts: parts})
	}
	return nil
}

// bedrockBlocks reads an array of content blocks; a cachePoint is the
// cache breakpoint of the block before it.
func bedrockBlocks(v json.RawMessage, what string) ([]Part, error) {
	var raws []json.RawMessage
	if err := unmarshal(v, &raws, what); err != nil {
		return nil, err
	}
	var parts []Part
	for _, raw := range raws {
		p, cache, err := bedrockBlock(raw)
		if err != nil {
			return nil, err
		}
		if cache != nil {
			if len(parts) == 0 || parts[len(parts)-1].Cache != nil {
				return nil, notInModel(bedrockDisplay, "cachePoint that follows no block")
			}
			parts[len(parts)-1].Cache = cache
			continue
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// bedrockOtherFeatures say what the blocks only Bedrock knows ask.
var bedrockOtherFeatures = map[string]Feature{"reasoningContent": FeatureThinking}

// bedrockBlock reads a content block, or a cachePoint.
func bedrockBlock(raw json.RawMessage) (Part, *Cache, error) {
	ms, err := members(raw)
	if err != nil {
		return Part{}, nil, malformed(bedrockDisplay, "content block", err)
	}
	if len(ms) != 1 {
		return Part{}, nil, malformedf(bedrockDisplay, "content block", "%d members, not one", len(ms))
	}
	key, v := ms[0].Key, ms[0].Value
	other := Part{Type: PartOther, Other: &Other{Dialect: bedrockName, Feature: bedrockOtherFeatures[key], Type: key, Raw: raw}}
	switch key {
	case "text":
		var s string
		if err := unmarshal(v, &s, key); err != nil {
			return Part{}, nil, malformed(bedrockDisplay, "content block", err)
		}
		return Text(s), nil, nil
	case "cachePoint":
		var c struct {
			Type string `json:"type"`
		}
		if err := unmarshal(v, &c, key); err != nil || c.Type != "default" {
			return Part{}, nil, notInModel(bedrockDisplay, "cachePoint of type %q", c.Type)
		}
		return Part{}, &Cache{}, nil
	case "image":
		var img struct {
			Format string `json:"format"`
			Source struct {
				Bytes *string `json:"bytes"`
			} `json:"source"`
		}
		if err := unmarshal(v, &img, key); err != nil {
			return Part{}, nil, malformed(bedrockDisplay, "content block", err)
		}
		if img.Source.Bytes == nil {
			return other, nil, nil // an S3 location
		}
		return Part{Type: PartImage, Image: &Image{MediaType: "image/" + img.Format, Data: *img.Source.Bytes}}, nil, nil
	case "toolUse":
		var tu struct {
			ToolUseID string          `json:"toolUseId"`
			Name      string          `json:"name"`
			Input     json.RawMessage `json:"input"`
		}
		if err := unmarshal(v, &tu, key); err != nil {
			return Part{}, nil, malformed(bedrockDisplay, "content block", err)
		}
		if isNull(tu.Input) {
			tu.Input = json.RawMessage("{}")
		}
		return Part{Type: PartToolCall, ToolCall: &ToolCall{ID: tu.ToolUseID, Name: tu.Name, Args: tu.Input}}, nil, nil
	case "toolResult":
		var tr struct {
			ToolUseID string            `json:"toolUseId"`
			Content   []json.RawMessage `json:"content"`
			Status    string            `json:"status"`
		}
		if err := unmarshal(v, &tr, key); err != nil {
			return Part{}, nil, malformed(bedrockDisplay, "content block", err)
		}
		res := &ToolResult{CallID: tr.ToolUseID, IsError: tr.Status == "error"}
		for _, c := range tr.Content {
			p, err := bedrockResultBlock(c)
			if err != nil {
				return Part{}, nil, err
			}
			if p.Type == PartOther {
				return other, nil, nil
			}
			res.Content = append(res.Content, p)
		}
		return Part{Type: PartToolResult, ToolResult: res}, nil, nil
	}
	return other, nil, nil
}

// bedrockResultBlock reads a block of a toolResult's content: text, json
// (as the text of its JSON), image; any other is an Other.
func bedrockResultBlock(raw json.RawMessage) (Part, error) {
	ms, err := members(raw)
	if err != nil || len(ms) != 1 {
		return Part{}, malformedf(bedrockDisplay, "toolResult content", "not a block of one member")
	}
	if ms[0].Key == "json" {
		return Text(string(compact(ms[0].Value))), nil
	}
	p, cache, err := bedrockBlock(raw)
	switch {
	case err != nil:
		return Part{}, err
	case cache != nil || (p.Type != PartText && p.Type != PartImage):
		return Part{Type: PartOther, Other: &Other{Dialect: bedrockName, Type: ms[0].Key, Raw: raw}}, nil
	}
	return p, nil
}

// bedrockPartType names a part as errors do.
func bedrockPartType(p Part) string {
	if p.Type == PartOther {
		return p.Other.Type
	}
	return p.Type.String()
}

func bedrockTools(r *Request, v json.RawMessage) error {
	ms, err := members(v)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if isNull(m.Value) {
			continue
		}
		switch m.Key {
		case "tools":
			var raws []json.RawMessage
			if err := unmarshal(m.Value, &raws, "toolConfig.tools"); err != nil {
				return err
			}
			for _, raw := range raws {
				if err := bedrockTool(r, raw); err != nil {
					return err
				}
			}
		case "toolChoice":
			var c struct {
				Auto *struct{} `json:"auto"`
				Any  *struct{} `json:"any"`
				Tool *struct {
					Name string `json:"name"`
				} `json:"tool"`
			}
			if err := unmarshal(m.Value, &c, "toolChoice"); err != nil {
				return err
			}
			switch {
			case c.Auto != nil:
				r.ToolChoice = ToolChoice{Mode: ToolAuto}
			case c.Any != nil:
				r.ToolChoice = ToolChoice{Mode: ToolRequired}
			case c.Tool != nil:
				r.ToolChoice = ToolChoice{Mode: ToolNamed, Name: c.Tool.Name}
			default:
				return notInModel(bedrockDisplay, "toolChoice %s", m.Value)
			}
		default:
			return notInModel(bedrockDisplay, "toolConfig member %q", m.Key)
		}
	}
	return nil
}

func bedrockTool(r *Request, raw json.RawMessage) error {
	var t struct {
		ToolSpec *struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema struct {
				JSON json.RawMessage `json:"json"`
			} `json:"inputSchema"`
			Strict *bool `json:"strict"`
		} `json:"toolSpec"`
		CachePoint *struct {
			Type string `json:"type"`
		} `json:"cachePoint"`
	}
	if err := json.Unmarshal(raw, &t); err != nil {
		return malformed(bedrockDisplay, "tool", err)
	}
	switch {
	case t.ToolSpec != nil:
		s := t.ToolSpec
		params := s.InputSchema.JSON
		if isNull(params) {
			params = nil
		}
		r.Tools = append(r.Tools, Tool{Name: s.Name, Description: s.Description, Parameters: params, Strict: s.Strict})
	case t.CachePoint != nil:
		if len(r.Tools) == 0 || r.Tools[len(r.Tools)-1].Cache != nil {
			return notInModel(bedrockDisplay, "cachePoint that follows no tool")
		}
		r.Tools[len(r.Tools)-1].Cache = &Cache{}
	default:
		var name string
		if ms, err := members(raw); err == nil && len(ms) > 0 {
			name = ms[0].Key
		}
		r.Extras = append(r.Extras, Extra{Feature: FeatureBuiltinTool, Dialect: bedrockName, Name: name, Value: raw})
	}
	return nil
}

// Encoding a request.

// bedrockFormats are the image formats Bedrock takes, by media type.
var bedrockFormats = map[string]string{"image/png": "png", "image/jpeg": "jpeg", "image/gif": "gif", "image/webp": "webp"}

func (bedrockCodec) EncodeRequest(r *Request) ([]byte, error) {
	switch {
	case r.TopK != nil:
		return nil, cannot(bedrockDisplay, "top_k (a model's own field, in additionalModelRequestFields)")
	case r.Seed != nil:
		return nil, cannot(bedrockDisplay, "seed")
	case r.PresencePenalty != nil:
		return nil, cannot(bedrockDisplay, "presence_penalty")
	case r.FrequencyPenalty != nil:
		return nil, cannot(bedrockDisplay, "frequency_penalty")
	case r.N > 1:
		return nil, cannot(bedrockDisplay, "n %d (one answer only)", r.N)
	case r.User != "":
		return nil, cannot(bedrockDisplay, "user")
	case r.ParallelToolCalls != nil && !*r.ParallelToolCalls:
		return nil, cannot(bedrockDisplay, "parallel_tool_calls false")
	}
	o := &object{}
	turns, err := mergeTurns(bedrockName, r.Messages)
	if err != nil {
		return nil, err
	}
	msgs := make([]any, 0, len(turns))
	calls := false
	for _, t := range turns {
		var blocks []any
		for _, p := range t.Parts {
			calls = calls || p.Type == PartToolCall || p.Type == PartToolResult
			if blocks, err = bedrockBlockOut(blocks, p); err != nil {
				return nil, err
			}
		}
		msgs = append(msgs, kv("role", string(t.Role), "content", blocks))
	}
	o.set("messages", msgs)
	if len(r.System) > 0 {
		var sys []any
		for _, p := range r.System {
			if p.Type != PartText {
				return nil, cannot(bedrockDisplay, "%s part in the system prompt", p.Type.a())
			}
			if sys, err = bedrockBlockOut(sys, p); err != nil {
				return nil, err
			}
		}
		o.set("system", sys)
	}
	ic := &object{}
	if r.MaxTokens > 0 {
		ic.set("maxTokens", r.MaxTokens)
	}
	if r.Temperature != nil {
		ic.set("temperature", *r.Temperature)
	}
	if r.TopP != nil {
		ic.set("topP", *r.TopP)
	}
	if len(r.Stop) > 0 {
		ic.set("stopSequences", r.Stop)
	}
	if len(ic.members) > 0 {
		o.set("inferenceConfig", ic)
	}
	var tools []any
	for _, t := range r.Tools {
		spec := &object{}
		spec.set("name", t.Name)
		if t.Description != "" {
			spec.set("description", t.Description)
		}
		schema := t.Parameters
		if schema == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		spec.set("inputSchema", kv("json", schema))
		if t.Strict != nil {
			spec.set("strict", *t.Strict)
		}
		tools = append(tools, kv("toolSpec", spec))
		if t.Cache != nil {
			cp, err := bedrockCachePoint(t.Cache)
			if err != nil {
				return nil, err
			}
			tools = append(tools, cp)
		}
	}
	extras := &object{}
	if err := writeExtras(bedrockName, r, extras, &tools); err != nil {
		return nil, err
	}
	if r.ToolChoice.Mode == ToolNone {
		if calls {
			return nil, cannot(bedrockDisplay, "tool_choice none with tool calls in the conversation")
		}
		tools = nil
	}
	if len(tools) > 0 {
		tc := o.obj("toolConfig")
		tc.set("tools", tools)
		switch r.ToolChoice.Mode {
		case ToolAuto:
			tc.set("toolChoice", kv("auto", struct{}{}))
		case ToolRequired:
			tc.set("toolChoice", kv("any", struct{}{}))
		case ToolNamed:
			tc.set("toolChoice", kv("tool", kv("name", r.ToolChoice.Name)))
		}
	} else if calls {
		return nil, cannot(bedrockDisplay, "tool calls in the conversation without tools")
	}
	if f := r.Format; f != nil {
		switch f.Type {
		case FormatJSONObject:
			return nil, cannot(bedrockDisplay, "response format json_object (a JSON schema only)")
		case FormatJSONSchema:
			js := &object{}
			js.set("schema", string(compact(f.Schema)))
			if f.Name != "" {
				js.set("name", f.Name)
			}
			if f.Description != "" {
				js.set("description", f.Description)
			}
			o.obj("outputConfig").set("textFormat", kv("type", "json_schema", "structure", kv("jsonSchema", js)))
		}
	}
	mergeExtras(o, extras)
	return o.bytes()
}

// bedrockCachePoint is the block of a cache breakpoint.
func bedrockCachePoint(c *Cache) (any, error) {
	if c.TTL != "" && c.TTL != "5m" {
		return nil, cannot(bedrockDisplay, "a cache breakpoint of ttl %s", c.TTL)
	}
	return kv("cachePoint", kv("type", "default")), nil
}

// bedrockBlockOut appends p to blocks as a content block, and its cache
// breakpoint after it.
func bedrockBlockOut(blocks []any, p Part) ([]any, error) {
	var b any
	switch p.Type {
	case PartText:
		b = kv("text", p.Text)
	case PartImage:
		img, err := bedrockImage(p.Image)
		if err != nil {
			return nil, err
		}
		b = img
	case PartToolCall:
		c := p.ToolCall
		if err := checkToolID(bedrockName, c.ID); err != nil {
			return nil, err
		}
		args, err := argsObject(bedrockName, c)
		if err != nil {
			return nil, err
		}
		b = kv("toolUse", kv("toolUseId", c.ID, "name", c.Name, "input", args))
	case PartToolResult:
		tr := p.ToolResult
		if err := checkToolID(bedrockName, tr.CallID); err != nil {
			return nil, err
		}
		content := []any{}
		for _, c := range tr.Content {
			switch c.Type {
			case PartText:
				if strings.TrimSpace(c.Text) != "" {
					content = append(content, kv("text", c.Text))
				}
			case PartImage:
				img, err := bedrockImage(c.Image)
				if err != nil {
					return nil, err
				}
				content = append(content, img)
			default:
				return nil, cannot(bedrockDisplay, "%s part in a tool result", c.Type.a())
			}
		}
		if len(content) == 0 {
			content = append(content, kv("text", NoToolOutput))
		}
		res := &object{}
		res.set("toolUseId", tr.CallID)
		res.set("content", content)
		if tr.IsError {
			res.set("status", "error")
		}
		b = kv("toolResult", res)
	case PartOther:
		if p.Other.Dialect != bedrockName {
			return nil, cannot(bedrockDisplay, "%s", otherName(p.Other))
		}
		b = p.Other.Raw
	default:
		return nil, cannot(bedrockDisplay, "a part of type %s", p.Type)
	}
	blocks = append(blocks, b)
	if p.Cache != nil {
		cp, err := bedrockCachePoint(p.Cache)
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, cp)
	}
	return blocks, nil
}

func bedrockImage(img *Image) (any, error) {
	format, ok := bedrockFormats[img.MediaType]
	switch {
	case img.URL != "":
		return nil, cannot(bedrockDisplay, "an image by URL")
	case img.Detail != "" && img.Detail != "auto":
		return nil, cannot(bedrockDisplay, "image detail %q", img.Detail)
	case !ok:
		return nil, cannot(bedrockDisplay, "an image of type %q", img.MediaType)
	}
	return kv("image", kv("format", format, "source", kv("bytes", img.Data))), nil
}
