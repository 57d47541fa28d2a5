package chat

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
)

// Gemini is Google's Gemini API, generateContent and
// streamGenerateContent (generativelanguage.googleapis.com, and Vertex
// AI's publishers/google models, which take the same body). The model
// and the stream are in the path: the decoders leave Request.Model and
// Request.Stream as they are and the encoders do not write them.
//
// How it maps:
//   - systemInstruction is the System prompt; contents are the
//     messages, role model the assistant's; the encoder makes one turn
//     per role in a row, function responses first;
//   - Gemini's function calls carry no id. The decoders make ids up,
//     stable for one answer or request: an answer's k-th call (from 0,
//     over the whole stream) is "call_<responseId>_<k>" (its responseId
//     cut to letters, digits, _ and -; "call_<k>" without one), a
//     request's k-th call "call_<k>". A functionResponse is tied to its
//     call by name and order: the first call of the turn before with its
//     name not yet answered. An id Gemini does give (functionCall.id,
//     functionResponse.id, which Vertex AI may send) is kept. The
//     encoders write no id: a tool result's name is its call's;
//   - a tool result is functionResponse.response: a result whose text is
//     a JSON object is that object, an empty one {}, else
//     {"result": text}, or {"error": text} when IsError; a response is
//     read back as the text of its JSON ({} as no content);
//   - schemas are written as parametersJsonSchema and responseJsonSchema;
//     the OpenAPI schemas of parameters and responseSchema are read as
//     JSON schemas, their type names in lower case;
//   - tool_choice: AUTO, NONE, ANY (ToolRequired), ANY with one allowed
//     function (ToolNamed); Gemini cannot take ParallelToolCalls false;
//   - a thoughtSignature is kept in Part.Signature and written back;
//   - finishReason STOP is StopToolUse when the answer calls a tool;
//     SAFETY, RECITATION, BLOCKLIST, PROHIBITED_CONTENT, SPII,
//     IMAGE_SAFETY and LANGUAGE are StopContentFilter; the rest
//     (MALFORMED_FUNCTION_CALL, OTHER, …) StopError; a prompt blocked
//     (promptFeedback.blockReason, no candidates) is StopContentFilter;
//   - usage: promptTokenCount holds the cached tokens, so Input is it
//     (with toolUsePromptTokenCount) less cachedContentTokenCount; Output
//     is candidatesTokenCount with thoughtsTokenCount; Gemini counts no
//     cache writes apart, and promptTokenCount is written as the whole
//     prompt;
//   - an answer's grounding and citation metadata are not read.
//
// Members are read by their camelCase names only (the REST API's and the
// SDKs'): a snake_case member is an extra.
var Gemini Codec = geminiCodec{}

type geminiCodec struct{}

const geminiDisplay = "Gemini"

func (geminiCodec) Name() string { return geminiName }

// geminiGeneration maps generationConfig's members to what they ask,
// for those the model has no field for.
var geminiGeneration = map[string]Feature{
	"responseLogprobs": FeatureLogprobs, "logprobs": FeatureLogprobs, "thinkingConfig": FeatureThinking,
	"responseModalities": FeatureAudio, "speechConfig": FeatureAudio,
}

func (geminiCodec) DecodeRequest(body []byte) (*Request, error) {
	ms, err := members(body)
	if err != nil {
		return nil, malformed(geminiDisplay, "request", err)
	}
	r := &Request{}
	for _, m := range ms {
		if isNull(m.Value) {
			continue
		}
		var err error
		switch m.Key {
		case "contents":
			err = geminiContents(r, m.Value)
		case "systemInstruction":
			var c geminiContent
			if err = unmarshal(m.Value, &c, m.Key); err == nil {
				r.System, err = geminiSystem(c)
			}
		case "tools":
			err = geminiTools(r, m.Value)
		case "toolConfig":
			err = geminiToolConfig(r, m.Value)
		case "generationConfig":
			err = geminiGenerationConfig(r, m.Value)
		case "labels":
			r.Extras = append(r.Extras, Extra{Feature: FeatureOther, Dialect: geminiName, Name: m.Key, Value: m.Value, Advisory: true})
		default:
			r.Extras = append(r.Extras, Extra{Feature: FeatureOther, Dialect: geminiName, Name: m.Key, Value: m.Value})
		}
		if err != nil {
			return nil, malformed(geminiDisplay, "request", err)
		}
	}
	dropEmptyText(r)
	return r, nil
}

// geminiContent is a Content: a role and its parts.
type geminiContent struct {
	Role  string            `json:"role,omitempty"`
	Parts []json.RawMessage `json:"parts"`
}

func geminiSystem(c geminiContent) ([]Part, error) {
	var parts []Part
	for _, raw := range c.Parts {
		p, err := geminiPartIn(raw, nil)
		if err != nil {
			return nil, err
		}
		if p.Type != PartText {
			return nil, notInModel(geminiDisplay, "systemInstruction part that is not text")
		}
		parts = append(parts, p)
	}
	return parts, nil
}

// geminiCalls ties a conversation's function responses to its calls.
type geminiCalls struct {
	n       int         // calls so far
	prefix  string      // "call_", or "call_<responseId>_"
	pending []*ToolCall // the calls of the last model turn not yet answered
}

// call returns the id of a call: its own, else the next made up.
func (g *geminiCalls) call(id string) string {
	k := g.n
	g.n++
	if id != "" {
		return id
	}
	return g.prefix + strconv.Itoa(k)
}

// answer returns the id of the call a response answers: its own id, else
// the first pending call of its name.
func (g *geminiCalls) answer(id, name string) (string, error) {
	for i, c := range g.pending {
		if (id != "" && c.ID == id) || (id == "" && c.Name == name) {
			g.pending = append(g.pending[:i], g.pending[i+1:]...)
			return c.ID, nil
		}
	}
	if id != "" {
		return id, nil
	}
	return "", malformedf(geminiDisplay, "request", "functionResponse %q answers no functionCall of the turn before", name)
}

func geminiContents(r *Request, v json.RawMessage) error {
	var cs []geminiContent
	if err := unmarshal(v, &cs, "contents"); err != nil {
		return err
	}
	calls := &geminiCalls{prefix: "call_"}
	for _, c := range cs {
		var role Role
		switch c.Role {
		case "user", "", "function":
			role = RoleUser
		case "model":
			role = RoleAssistant
			calls.pending = calls.pending[:0]
		default:
			return notInModel(geminiDisplay, "content role %q", c.Role)
		}
		m := Message{Role: role}
		for _, raw := range c.Parts {
			p, err := geminiPartIn(raw, calls)
			if err != nil {
				return err
			}
			if p.Type == PartToolCall {
				calls.pending = append(calls.pending, p.ToolCall)
			}
			m.Parts = append(m.Parts, p)
		}
		r.Messages = append(r.Messages, m)
	}
	return nil
}

// geminiPart is a Part as the decoders read it.
type geminiPart struct {
	Text             *string `json:"text"`
	Thought          bool    `json:"thought"`
	ThoughtSignature string  `json:"thoughtSignature"`
	InlineData       *struct {
		MimeType string `json:"mimeType"`
		Data     string `json:"data"`
	} `json:"inlineData"`
	FileData *struct {
		MimeType string `json:"mimeType"`
		FileURI  string `json:"fileUri"`
	} `json:"fileData"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
}

// geminiPartKeys are the members of a part the model carries.
var geminiPartKeys = map[string]bool{
	"text": true, "thoughtSignature": true, "inlineData": true, "fileData": true, "functionCall": true,
	"functionResponse": true,
}

// geminiPartIn reads a part; calls ties function calls and responses
// (nil where none may be).
func geminiPartIn(raw json.RawMessage, calls *geminiCalls) (Part, error) {
	ms, err := members(raw)
	if err != nil {
		return Part{}, malformed(geminiDisplay, "part", err)
	}
	var gp geminiPart
	if err := json.Unmarshal(raw, &gp); err != nil {
		return Part{}, malformed(geminiDisplay, "part", err)
	}
	kind := ""
	for _, m := range ms {
		if !geminiPartKeys[m.Key] && !isNull(m.Value) {
			kind = m.Key
		}
	}
	other := func(f Feature, typ string) (Part, error) {
		return Part{Type: PartOther, Other: &Other{Dialect: geminiName, Feature: f, Type: typ, Raw: raw}}, nil
	}
	switch {
	case gp.Thought:
		return other(FeatureThinking, "thought")
	case kind != "":
		return other("", kind)
	}
	p := Part{Signature: gp.ThoughtSignature}
	switch {
	case gp.Text != nil:
		p.Type, p.Text = PartText, *gp.Text
	case gp.InlineData != nil:
		if !strings.HasPrefix(gp.InlineData.MimeType, "image/") {
			f := Feature("")
			if strings.HasPrefix(gp.InlineData.MimeType, "audio/") {
				f = FeatureAudio
			}
			return other(f, "inlineData")
		}
		p.Type, p.Image = PartImage, &Image{MediaType: gp.InlineData.MimeType, Data: gp.InlineData.Data}
	case gp.FileData != nil:
		if !strings.HasPrefix(gp.FileData.MimeType, "image/") {
			return other("", "fileData")
		}
		p.Type, p.Image = PartImage, &Image{MediaType: gp.FileData.MimeType, URL: gp.FileData.FileURI}
	case gp.FunctionCall != nil && calls != nil:
		fc := gp.FunctionCall
		args := fc.Args
		if isNull(args) {
			args = json.RawMessage("{}")
		}
		p.Type, p.ToolCall = PartToolCall, &ToolCall{ID: calls.call(fc.ID), Name: fc.Name, Args: compact(args)}
	case gp.FunctionResponse != nil && calls != nil:
		fr := gp.FunctionResponse
		id, err := calls.answer(fr.ID, fr.Name)
		if err != nil {
			return Part{}, err
		}
		tr := &ToolResult{CallID: id}
		if resp := compact(fr.Response); !isNull(resp) && string(resp) != "{}" {
			tr.Content = []Part{Text(string(resp))}
		}
		p.Type, p.ToolResult = PartToolResult, tr
	default:
		return Part{}, malformedf(geminiDisplay, "part", "a part of no kind the model carries")
	}
	return p, nil
}

// compact returns v without insignificant space, or v when it is not
// JSON.
func compact(v json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

func geminiTools(r *Request, v json.RawMessage) error {
	var raws []json.RawMessage
	if err := unmarshal(v, &raws, "tools"); err != nil {
		return err
	}
	for _, raw := range raws {
		ms, err := members(raw)
		if err != nil {
			return malformed(geminiDisplay, "tool", err)
		}
		for _, m := range ms {
			if m.Key != "functionDeclarations" {
				one, _ := json.Marshal(map[string]json.RawMessage{m.Key: m.Value})
				r.Extras = append(r.Extras, Extra{Feature: FeatureBuiltinTool, Dialect: geminiName, Name: m.Key, Value: one})
				continue
			}
			var fds []struct {
				Name                 string          `json:"name"`
				Description          string          `json:"description"`
				Parameters           json.RawMessage `json:"parameters"`
				ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
			}
			if err := unmarshal(m.Value, &fds, "functionDeclarations"); err != nil {
				return err
			}
			for _, fd := range fds {
				t := Tool{Name: fd.Name, Description: fd.Description}
				switch {
				case !isNull(fd.ParametersJSONSchema):
					t.Parameters = fd.ParametersJSONSchema
				case !isNull(fd.Parameters):
					t.Parameters = openAPISchema(fd.Parameters)
				}
				r.Tools = append(r.Tools, t)
			}
		}
	}
	return nil
}

// openAPISchema reads a Gemini Schema (an OpenAPI schema, its type
// names in upper case: OBJECT, STRING) as a JSON schema: its type names
// in lower case.
func openAPISchema(v json.RawMessage) json.RawMessage {
	var s any
	if json.Unmarshal(v, &s) != nil {
		return v
	}
	var walk func(any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			for k, v := range x {
				if t, ok := v.(string); ok && k == "type" {
					x[k] = strings.ToLower(t)
					continue
				}
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(s)
	b, err := json.Marshal(s)
	if err != nil {
		return v
	}
	return b
}

func geminiToolConfig(r *Request, v json.RawMessage) error {
	ms, err := members(v)
	if err != nil {
		return err
	}
	for _, m := range ms {
		if m.Key != "functionCallingConfig" {
			r.Extras = append(r.Extras, Extra{Feature: FeatureOther, Dialect: geminiName, In: "toolConfig", Name: m.Key, Value: m.Value})
			continue
		}
		var c struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		}
		if err := unmarshal(m.Value, &c, "functionCallingConfig"); err != nil {
			return err
		}
		switch {
		case c.Mode == "AUTO" && len(c.AllowedFunctionNames) == 0:
			r.ToolChoice = ToolChoice{Mode: ToolAuto}
		case c.Mode == "NONE" && len(c.AllowedFunctionNames) == 0:
			r.ToolChoice = ToolChoice{Mode: ToolNone}
		case c.Mode == "ANY" && len(c.AllowedFunctionNames) == 0:
			r.ToolChoice = ToolChoice{Mode: ToolRequired}
		case c.Mode == "ANY" && len(c.AllowedFunctionNames) == 1:
			r.ToolChoice = ToolChoice{Mode: ToolNamed, Name: c.AllowedFunctionNames[0]}
		case c.Mode == "" || c.Mode == "MODE_UNSPECIFIED":
		default:
			return notInModel(geminiDisplay, "functionCallingConfig mode %s with %d allowed functions", c.Mode, len(c.AllowedFunctionNames))
		}
	}
	return nil
}

func geminiGenerationConfig(r *Request, v json.RawMessage) error {
	ms, err := members(v)
	if err != nil {
		return err
	}
	var mime string
	var schema json.RawMessage
	for _, m := range ms {
		if isNull(m.Value) {
			continue
		}
		var err error
		switch m.Key {
		case "stopSequences":
			err = unmarshal(m.Value, &r.Stop, m.Key)
		case "temperature":
			err = unmarshal(m.Value, &r.Temperature, m.Key)
		case "topP":
			err = unmarshal(m.Value, &r.TopP, m.Key)
		case "topK":
			var k float64 // a float in Gemini's API
			if err = unmarshal(m.Value, &k, m.Key); err == nil {
				n := int64(k)
				if float64(n) != k {
					return notInModel(geminiDisplay, "topK %v, which is not whole", k)
				}
				r.TopK = &n
			}
		case "candidateCount":
			err = unmarshal(m.Value, &r.N, m.Key)
		case "maxOutputTokens":
			err = unmarshal(m.Value, &r.MaxTokens, m.Key)
		case "seed":
			err = unmarshal(m.Value, &r.Seed, m.Key)
		case "presencePenalty":
			err = unmarshal(m.Value, &r.PresencePenalty, m.Key)
		case "frequencyPenalty":
			err = unmarshal(m.Value, &r.FrequencyPenalty, m.Key)
		case "responseMimeType":
			err = unmarshal(m.Value, &mime, m.Key)
		case "responseJsonSchema":
			schema = m.Value
		case "responseSchema":
			if schema == nil {
				schema = openAPISchema(m.Value)
			}
		case "responseModalities":
			var mods []string
			if err = unmarshal(m.Value, &mods, m.Key); err == nil && !(len(mods) == 1 && strings.EqualFold(mods[0], "TEXT")) {
				r.Extras = append(r.Extras, Extra{Feature: FeatureAudio, Dialect: geminiName, In: "generationConfig", Name: m.Key, Value: m.Value})
			}
		default:
			f, ok := geminiGeneration[m.Key]
			if !ok {
				f = FeatureOther
			}
			r.Extras = append(r.Extras, Extra{Feature: f, Dialect: geminiName, In: "generationConfig", Name: m.Key, Value: m.Value})
		}
		if err != nil {
			return err
		}
	}
	switch {
	case mime == "application/json" && schema != nil:
		r.Format = &Format{Type: FormatJSONSchema, Schema: schema}
	case mime == "application/json":
		r.Format = &Format{Type: FormatJSONObject}
	case mime == "text/plain" && schema == nil:
		r.Format = &Format{Type: FormatText}
	case mime == "" && schema == nil:
	default:
		return notInModel(geminiDisplay, "responseMimeType %q with a schema %v", mime, schema != nil)
	}
	return nil
}

// Encoding a request.

func (geminiCodec) EncodeRequest(r *Request) ([]byte, error) {
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
		return nil, cannot(geminiDisplay, "parallel_tool_calls false")
	}
	if r.User != "" {
		return nil, cannot(geminiDisplay, "user")
	}
	o := &object{}
	contents, err := geminiContentsOut(r.Messages)
	if err != nil {
		return nil, err
	}
	o.set("contents", contents)
	if len(r.System) > 0 {
		var parts []any
		for _, p := range r.System {
			if p.Type != PartText {
				return nil, cannot(geminiDisplay, "%s part in the system prompt", p.Type.a())
			}
			parts = append(parts, geminiTextOut(p))
		}
		o.set("systemInstruction", kv("parts", parts))
	}
	var tools, decls []any
	for _, t := range r.Tools {
		if t.Strict != nil && *t.Strict {
			return nil, cannot(geminiDisplay, "strict tool %q", t.Name)
		}
		d := &object{}
		d.set("name", t.Name)
		if t.Description != "" {
			d.set("description", t.Description)
		}
		if t.Parameters != nil {
			d.set("parametersJsonSchema", t.Parameters)
		}
		decls = append(decls, d)
	}
	if len(decls) > 0 {
		tools = append(tools, kv("functionDeclarations", decls))
	}
	extras := &object{}
	if err := writeExtras(geminiName, r, extras, &tools); err != nil {
		return nil, err
	}
	if len(tools) > 0 {
		o.set("tools", tools)
	}
	if fc := geminiToolChoiceOut(r.ToolChoice); fc != nil {
		o.obj("toolConfig").set("functionCallingConfig", fc)
	}
	g := &object{}
	if len(r.Stop) > 0 {
		g.set("stopSequences", r.Stop)
	}
	if r.Temperature != nil {
		g.set("temperature", *r.Temperature)
	}
	if r.TopP != nil {
		g.set("topP", *r.TopP)
	}
	if r.TopK != nil {
		g.set("topK", *r.TopK)
	}
	if r.N != 0 {
		g.set("candidateCount", r.N)
	}
	if r.MaxTokens > 0 {
		g.set("maxOutputTokens", r.MaxTokens)
	}
	if r.Seed != nil {
		g.set("seed", *r.Seed)
	}
	if r.PresencePenalty != nil {
		g.set("presencePenalty", *r.PresencePenalty)
	}
	if r.FrequencyPenalty != nil {
		g.set("frequencyPenalty", *r.FrequencyPenalty)
	}
	if f := r.Format; f != nil {
		switch f.Type {
		case FormatText:
			g.set("responseMimeType", "text/plain")
		case FormatJSONObject:
			g.set("responseMimeType", "application/json")
		case FormatJSONSchema:
			g.set("responseMimeType", "application/json")
			g.set("responseJsonSchema", f.Schema)
		}
	}
	if len(g.members) > 0 {
		o.set("generationConfig", g)
	}
	mergeExtras(o, extras)
	return o.bytes()
}

func geminiToolChoiceOut(c ToolChoice) *object {
	switch c.Mode {
	case ToolAuto:
		return kv("mode", "AUTO")
	case ToolNone:
		return kv("mode", "NONE")
	case ToolRequired:
		return kv("mode", "ANY")
	case ToolNamed:
		return kv("mode", "ANY", "allowedFunctionNames", []string{c.Name})
	}
	return nil
}

func geminiTextOut(p Part) *object {
	m := kv("text", p.Text)
	if p.Signature != "" {
		m.set("thoughtSignature", p.Signature)
	}
	return m
}

func geminiContentsOut(msgs []Message) ([]any, error) {
	turns, err := mergeTurns(geminiName, msgs)
	if err != nil {
		return nil, err
	}
	names := callNames(msgs)
	out := make([]any, 0, len(turns))
	for _, t := range turns {
		role := "user"
		if t.Role == RoleAssistant {
			role = "model"
		}
		parts := make([]any, 0, len(t.Parts))
		for _, p := range t.Parts {
			gp, err := geminiPartOut(p, names)
			if err != nil {
				return nil, err
			}
			parts = append(parts, gp)
		}
		out = append(out, kv("role", role, "parts", parts))
	}
	return out, nil
}

func geminiPartOut(p Part, names map[string]string) (any, error) {
	o := &object{}
	switch p.Type {
	case PartText:
		return geminiTextOut(p), nil
	case PartImage:
		img := p.Image
		switch {
		case img.Detail != "" && img.Detail != "auto":
			return nil, cannot(geminiDisplay, "image detail %q", img.Detail)
		case img.MediaType == "":
			return nil, cannot(geminiDisplay, "an image by URL without its media type")
		case img.URL != "":
			o.set("fileData", kv("mimeType", img.MediaType, "fileUri", img.URL))
		default:
			o.set("inlineData", kv("mimeType", img.MediaType, "data", img.Data))
		}
	case PartToolCall:
		args, err := argsObject(geminiName, p.ToolCall)
		if err != nil {
			return nil, err
		}
		o.set("functionCall", kv("name", p.ToolCall.Name, "args", args))
	case PartToolResult:
		tr := p.ToolResult
		name, ok := names[tr.CallID]
		if !ok {
			return nil, cannot(geminiDisplay, "tool result %q, which answers no tool call", tr.CallID)
		}
		s, ok := textOnly(tr.Content, "")
		if !ok {
			return nil, cannot(geminiDisplay, "a tool result that is not text")
		}
		var resp any = json.RawMessage(s)
		switch {
		case s == "" && !tr.IsError:
			resp = struct{}{}
		case tr.IsError:
			resp = kv("error", s)
		case !isObject(json.RawMessage(s)):
			resp = kv("result", s)
		}
		o.set("functionResponse", kv("name", name, "response", resp))
	case PartOther:
		if p.Other.Dialect != geminiName {
			return nil, cannot(geminiDisplay, "%s", otherName(p.Other))
		}
		return p.Other.Raw, nil
	default:
		return nil, cannot(geminiDisplay, "a part of type %s", p.Type)
	}
	if p.Signature != "" {
		o.set("thoughtSignature", p.Signature)
	}
	return o, nil
}
