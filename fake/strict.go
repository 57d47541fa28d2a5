package fake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/sluice-llm/sluice/dialect/chat"
)

// This file holds the strict check of a chat request (Provider.Strict):
// each API's rules as its provider enforces them, so that a request a
// real provider would refuse with a 400 is refused here too, with a
// message naming what is wrong, the way the provider words it where it is
// known.

// validate returns why d's provider would refuse body, "" when it would
// take it. Endpoints with no chat codec are not checked.
func validate(d dialect, body []byte) string {
	var err error
	switch d.(type) {
	case vertexAnthropic:
		err = checkVertexAnthropic(body) // vertex.go
	default:
		switch chatCodec(d) {
		case nil:
			return ""
		case chat.OpenAI:
			err = checkOpenAI(body)
		case chat.Anthropic:
			err = checkAnthropic(body, true)
		case chat.Gemini:
			err = checkGemini(body)
		case chat.Bedrock:
			err = checkConverse(body)
		}
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// obj is a JSON object's members, undecoded.
type obj map[string]json.RawMessage

// object decodes raw as a JSON object; what names it in errors.
func object(raw json.RawMessage, what string) (obj, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%s: Input should be an object", what)
	}
	var o obj
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	return o, nil
}

// array decodes raw as a JSON array.
func array(raw json.RawMessage, what string) ([]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '[' {
		return nil, fmt.Errorf("%s: Input should be a valid list", what)
	}
	var a []json.RawMessage
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	return a, nil
}

// str decodes o[key] as a string; ok is false when it is absent or null.
func (o obj) str(key, what string) (s string, ok bool, err error) {
	v, present := o[key]
	if !present || isNullJSON(v) {
		return "", false, nil
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false, fmt.Errorf("%s.%s: Input should be a valid string", what, key)
	}
	return s, true, nil
}

// has reports whether o has key, not null.
func (o obj) has(key string) bool {
	v, ok := o[key]
	return ok && !isNullJSON(v)
}

// isString reports whether raw is a JSON string.
func isString(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) > 0 && raw[0] == '"'
}

func isNullJSON(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// onlyKeys refuses a member of o not in allowed, as the APIs that reject
// unknown fields do.
func onlyKeys(o obj, what string, allowed ...string) error {
	for k := range o {
		if !slices.Contains(allowed, k) {
			return fmt.Errorf("%s.%s: Extra inputs are not permitted", what, k)
		}
	}
	return nil
}

// exactlyOne returns the one member of o among keys, refusing none or
// several; other members than keys are allowed only in extra.
func exactlyOne(o obj, what string, keys []string, extra ...string) (string, error) {
	var found []string
	for k := range o {
		switch {
		case slices.Contains(keys, k):
			found = append(found, k)
		case slices.Contains(extra, k):
		default:
			return "", fmt.Errorf("%s: unknown member %q", what, k)
		}
	}
	if len(found) != 1 {
		return "", fmt.Errorf("%s: want exactly one of %s, got %d", what, strings.Join(keys, ", "), len(found))
	}
	return found[0], nil
}

// toolName is the tool names Anthropic, OpenAI and Bedrock take.
var toolName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// jsonSchemaObject checks that raw is a JSON schema of an object.
func jsonSchemaObject(raw json.RawMessage, what string) error {
	o, err := object(raw, what)
	if err != nil {
		return err
	}
	if t, _, _ := o.str("type", what); t != "object" {
		return fmt.Errorf("%s.type: Input should be 'object'", what)
	}
	return nil
}

// ---- Anthropic Messages ----

// anthropicBlockTypes are the content block types Anthropic's Messages
// API knows.
var anthropicBlockTypes = []string{"text", "image", "document", "search_result", "tool_use", "tool_result",
	"thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result",
	"code_execution_tool_result", "container_upload", "mcp_tool_use", "mcp_tool_result"}

// checkAnthropic checks a Messages request: max_tokens; messages of
// roles user and assistant, alternating, from a user turn, no system
// message (the system prompt is the top's system); known block types,
// non-empty text; tool_use in assistant turns, each answered by a
// tool_result in the next user turn, whose every tool_result answers a
// tool_use of that assistant turn; tools and tool_choice. withModel asks
// for a model in the body (not on Vertex AI, where the path names it).
func checkAnthropic(body []byte, withModel bool) error {
	r, err := object(body, "body")
	if err != nil {
		return err
	}
	if withModel {
		if m, _, err := r.str("model", "body"); err != nil || m == "" {
			return fmt.Errorf("model: Field required")
		}
	}
	var max int64
	if v, ok := r["max_tokens"]; !ok || json.Unmarshal(v, &max) != nil {
		return fmt.Errorf("max_tokens: Field required")
	}
	if max < 1 {
		return fmt.Errorf("max_tokens: Input should be greater than or equal to 1")
	}
	if r.has("system") && !isString(r["system"]) {
		blocks, err := array(r["system"], "system")
		if err != nil {
			return err
		}
		for i, b := range blocks {
			o, err := object(b, fmt.Sprintf("system.%d", i))
			if err != nil {
				return err
			}
			if t, _, _ := o.str("type", "system"); t != "text" {
				return fmt.Errorf("system.%d.type: Input should be 'text'", i)
			}
			if s, _, _ := o.str("text", "system"); s == "" {
				return fmt.Errorf("system: text content blocks must be non-empty")
			}
		}
	}
	tools := map[string]bool{}
	if r.has("tools") {
		ts, err := array(r["tools"], "tools")
		if err != nil {
			return err
		}
		for i, t := range ts {
			what := fmt.Sprintf("tools.%d", i)
			o, err := object(t, what)
			if err != nil {
				return err
			}
			name, _, _ := o.str("name", what)
			if !toolName.MatchString(name) {
				return fmt.Errorf("%s.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", what)
			}
			tools[name] = true
			typ, _, _ := o.str("type", what)
			if typ == "" || typ == "custom" {
				if err := jsonSchemaObject(o["input_schema"], what+".input_schema"); err != nil {
					return err
				}
				if err := onlyKeys(o, what, "type", "name", "description", "input_schema", "cache_control"); err != nil {
					return err
				}
			}
		}
	}
	if r.has("tool_choice") {
		o, err := object(r["tool_choice"], "tool_choice")
		if err != nil {
			return err
		}
		switch t, _, _ := o.str("type", "tool_choice"); t {
		case "auto", "any", "none":
		case "tool":
			if n, _, _ := o.str("name", "tool_choice"); !tools[n] {
				return fmt.Errorf("tool_choice.name: tool %q is not in tools", n)
			}
		default:
			return fmt.Errorf("tool_choice.type: Input should be 'auto', 'any', 'tool' or 'none'")
		}
		if len(tools) == 0 {
			return fmt.Errorf("tool_choice may only be specified while providing tools")
		}
	}
	msgs, err := array(r["messages"], "messages")
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return fmt.Errorf("messages: at least one message is required")
	}
	var pending []string // the tool_use ids of the previous assistant turn
	prev := ""
	for i, m := range msgs {
		what := fmt.Sprintf("messages.%d", i)
		o, err := object(m, what)
		if err != nil {
			return err
		}
		if err := onlyKeys(o, what, "role", "content"); err != nil {
			return err
		}
		role, _, _ := o.str("role", what)
		switch role {
		case "user", "assistant":
		case "system":
			return fmt.Errorf(`%s.role: Input should be 'user' or 'assistant'; a system prompt is the top-level "system" parameter`, what)
		default:
			return fmt.Errorf("%s.role: Input should be 'user' or 'assistant'", what)
		}
		if i == 0 && role != "user" {
			return fmt.Errorf("messages: first message must use the \"user\" role")
		}
		if role == prev {
			return fmt.Errorf("messages: roles must alternate between \"user\" and \"assistant\", but found multiple %q roles in a row", role)
		}
		prev = role
		var uses, results []string
		if !isString(o["content"]) {
			blocks, err := array(o["content"], what+".content")
			if err != nil {
				return err
			}
			if len(blocks) == 0 && (role == "user" || i < len(msgs)-1) {
				return fmt.Errorf("%s: all messages must have non-empty content except for the optional final assistant message", what)
			}
			for j, b := range blocks {
				bw := fmt.Sprintf("%s.content.%d", what, j)
				bo, err := object(b, bw)
				if err != nil {
					return err
				}
				typ, _, _ := bo.str("type", bw)
				if !slices.Contains(anthropicBlockTypes, typ) {
					return fmt.Errorf("%s.type: unknown content block type %q", bw, typ)
				}
				switch typ {
				case "text":
					if s, _, _ := bo.str("text", bw); s == "" {
						return fmt.Errorf("%s: text content blocks must be non-empty", what)
					}
				case "image":
					if err := anthropicImageSource(bo["source"], bw+".source"); err != nil {
						return err
					}
				case "tool_use":
					if role != "assistant" {
						return fmt.Errorf("%s: tool_use blocks are only allowed in assistant messages", bw)
					}
					id, _, _ := bo.str("id", bw)
					name, _, _ := bo.str("name", bw)
					if id == "" || !toolName.MatchString(name) {
						return fmt.Errorf("%s: a tool_use block needs an id and a valid name", bw)
					}
					if _, err := object(bo["input"], bw+".input"); err != nil {
						return err
					}
					uses = append(uses, id)
				case "tool_result":
					if role != "user" {
						return fmt.Errorf("%s: tool_result blocks are only allowed in user messages", bw)
					}
					id, _, _ := bo.str("tool_use_id", bw)
					if !slices.Contains(pending, id) {
						return fmt.Errorf("%s: unexpected `tool_use_id` found in `tool_result` blocks: %s. "+
							"Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", what, id)
					}
					if len(results) < j {
						return fmt.Errorf("%s: tool_result blocks must come first in the user message, before any other content", what)
					}
					results = append(results, id)
				}
			}
		} else if s, _, _ := o.str("content", what); s == "" && role == "user" {
			return fmt.Errorf("%s: all messages must have non-empty content except for the optional final assistant message", what)
		}
		if role == "user" {
			for _, id := range pending {
				if !slices.Contains(results, id) {
					return fmt.Errorf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. "+
						"Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i-1, id)
				}
			}
		}
		pending = uses
	}
	return nil
}

// anthropicImageTypes are the media types Anthropic takes an image in.
var anthropicImageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// anthropicImageSource checks an image block's source: base64 data of a
// media type it takes, or a URL.
func anthropicImageSource(raw json.RawMessage, what string) error {
	o, err := object(raw, what)
	if err != nil {
		return err
	}
	switch t, _, _ := o.str("type", what); t {
	case "base64":
		mt, _, _ := o.str("media_type", what)
		if !slices.Contains(anthropicImageTypes, mt) {
			return fmt.Errorf("%s.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'", what)
		}
		if d, _, _ := o.str("data", what); d == "" {
			return fmt.Errorf("%s.data: Field required", what)
		}
	case "url":
		if u, _, _ := o.str("url", what); u == "" {
			return fmt.Errorf("%s.url: Field required", what)
		}
	default:
		return fmt.Errorf("%s.type: Input should be 'base64' or 'url'", what)
	}
	return nil
}

// ---- OpenAI Chat Completions ----

// checkOpenAI checks a Chat Completions request: a model; messages of
// known roles; an assistant turn's tool_calls each answered by a tool
// message of its tool_call_id right after it, every tool message
// answering one; tools of type function; tool_choice naming a tool it
// has; a json_schema response_format with a name and a schema.
func checkOpenAI(body []byte) error {
	r, err := object(body, "body")
	if err != nil {
		return err
	}
	if m, _, err := r.str("model", "body"); err != nil || m == "" {
		return fmt.Errorf("you must provide a model parameter")
	}
	tools := map[string]bool{}
	if r.has("tools") {
		ts, err := array(r["tools"], "tools")
		if err != nil {
			return err
		}
		for i, t := range ts {
			what := fmt.Sprintf("tools[%d]", i)
			o, err := object(t, what)
			if err != nil {
				return err
			}
			if typ, _, _ := o.str("type", what); typ != "function" {
				return fmt.Errorf("Invalid value: '%s'. Supported values are: 'function' and 'custom'. (%s.type)", typ, what)
			}
			f, err := object(o["function"], what+".function")
			if err != nil {
				return err
			}
			name, _, _ := f.str("name", what)
			if !toolName.MatchString(name) {
				return fmt.Errorf("Invalid '%s.function.name': string does not match pattern.", what)
			}
			if f.has("parameters") {
				if _, err := object(f["parameters"], what+".function.parameters"); err != nil {
					return err
				}
			}
			tools[name] = true
		}
	}
	if r.has("tool_choice") {
		if len(tools) == 0 {
			return fmt.Errorf("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
		}
		if isString(r["tool_choice"]) {
			s, _, _ := r.str("tool_choice", "body")
			if !slices.Contains([]string{"none", "auto", "required"}, s) {
				return fmt.Errorf("Invalid value: '%s'. Supported values are: 'none', 'auto', and 'required'.", s)
			}
		} else {
			o, err := object(r["tool_choice"], "tool_choice")
			if err != nil {
				return err
			}
			f, err := object(o["function"], "tool_choice.function")
			if err != nil {
				return err
			}
			if n, _, _ := f.str("name", "tool_choice.function"); !tools[n] {
				return fmt.Errorf("Invalid value for 'tool_choice': function %q is not in tools.", n)
			}
		}
	}
	if r.has("response_format") {
		o, err := object(r["response_format"], "response_format")
		if err != nil {
			return err
		}
		switch t, _, _ := o.str("type", "response_format"); t {
		case "text", "json_object":
		case "json_schema":
			s, err := object(o["json_schema"], "response_format.json_schema")
			if err != nil {
				return fmt.Errorf("Missing required parameter: 'response_format.json_schema'.")
			}
			if n, _, _ := s.str("name", "json_schema"); n == "" {
				return fmt.Errorf("Missing required parameter: 'response_format.json_schema.name'.")
			}
		default:
			return fmt.Errorf("Invalid value: '%s'. Supported values are: 'json_object', 'json_schema', and 'text'.", t)
		}
	}
	msgs, err := array(r["messages"], "messages")
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return fmt.Errorf("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	var pending []string // tool_call ids not answered yet
	for i, m := range msgs {
		what := fmt.Sprintf("messages[%d]", i)
		o, err := object(m, what)
		if err != nil {
			return err
		}
		role, _, _ := o.str("role", what)
		if role != "tool" && len(pending) > 0 {
			return fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "+
				"The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", "))
		}
		switch role {
		case "system", "developer", "user":
			if !o.has("content") {
				return fmt.Errorf("Missing required parameter: '%s.content'.", what)
			}
		case "assistant":
			if o.has("tool_calls") {
				calls, err := array(o["tool_calls"], what+".tool_calls")
				if err != nil {
					return err
				}
				for j, c := range calls {
					cw := fmt.Sprintf("%s.tool_calls[%d]", what, j)
					co, err := object(c, cw)
					if err != nil {
						return err
					}
					id, _, _ := co.str("id", cw)
					if typ, _, _ := co.str("type", cw); id == "" || typ != "function" {
						return fmt.Errorf("Missing required parameter: '%s.id' (or its type is not 'function').", cw)
					}
					f, err := object(co["function"], cw+".function")
					if err != nil {
						return err
					}
					if _, ok, err := f.str("arguments", cw+".function"); err != nil || !ok {
						return fmt.Errorf("Invalid type for '%s.function.arguments': expected a string.", cw)
					}
					pending = append(pending, id)
				}
			} else if !o.has("content") {
				return fmt.Errorf("Missing required parameter: '%s.content'.", what)
			}
		case "tool":
			id, _, _ := o.str("tool_call_id", what)
			k := slices.Index(pending, id)
			if k < 0 {
				return fmt.Errorf("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")
			}
			pending = slices.Delete(pending, k, k+1)
		default:
			return fmt.Errorf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'. (%s.role)", role, what)
		}
	}
	if len(pending) > 0 {
		return fmt.Errorf("An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. "+
			"The following tool_call_ids did not have response messages: %s", strings.Join(pending, ", "))
	}
	return nil
}

// ---- Gemini generateContent ----

// geminiName is the function names Gemini takes.
var geminiName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}$`)

// geminiTop are the members a generateContent request may have, in both
// spellings the API reads.
var geminiTop = []string{"contents", "systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config",
	"generationConfig", "generation_config", "safetySettings", "safety_settings", "cachedContent", "cached_content", "labels"}

// geminiPartKinds are what a part may hold, one each.
var geminiPartKinds = []string{"text", "inlineData", "inline_data", "fileData", "file_data", "functionCall", "function_call",
	"functionResponse", "function_response", "executableCode", "codeExecutionResult"}

// checkGemini checks a generateContent request: no unknown member;
// contents of roles user and model, each with parts holding one thing
// each; a functionCall only in a model turn that follows a user turn; a
// functionResponse only in the user turn right after a functionCall
// turn, one for each call, of a called name; tools of
// functionDeclarations; the function calling mode and allowed names; a
// response schema only with a JSON mime type.
func checkGemini(body []byte) error {
	r, err := object(body, "body")
	if err != nil {
		return err
	}
	for k := range r {
		if !slices.Contains(geminiTop, k) {
			return fmt.Errorf("Invalid JSON payload received. Unknown name %q: Cannot find field.", k)
		}
	}
	declared := map[string]bool{}
	for _, key := range []string{"tools"} {
		if !r.has(key) {
			continue
		}
		ts, err := array(r[key], key)
		if err != nil {
			return err
		}
		for i, t := range ts {
			what := fmt.Sprintf("tools[%d]", i)
			o, err := object(t, what)
			if err != nil {
				return err
			}
			if err := onlyKeys(o, what, "functionDeclarations", "function_declarations", "googleSearch", "google_search",
				"codeExecution", "code_execution", "urlContext", "url_context", "googleSearchRetrieval"); err != nil {
				return fmt.Errorf("Invalid JSON payload received. Unknown name in %s: %v", what, err)
			}
			fds := o["functionDeclarations"]
			if fds == nil {
				fds = o["function_declarations"]
			}
			if fds == nil {
				continue
			}
			ds, err := array(fds, what+".functionDeclarations")
			if err != nil {
				return err
			}
			for j, d := range ds {
				dw := fmt.Sprintf("%s.functionDeclarations[%d]", what, j)
				do, err := object(d, dw)
				if err != nil {
					return err
				}
				if err := onlyKeys(do, dw, "name", "description", "parameters", "parametersJsonSchema",
					"parameters_json_schema", "response", "responseJsonSchema", "behavior"); err != nil {
					return fmt.Errorf("Invalid JSON payload received. %v", err)
				}
				name, _, _ := do.str("name", dw)
				if !geminiName.MatchString(name) {
					return fmt.Errorf("* GenerateContentRequest.%s.name: Invalid function name.", dw)
				}
				declared[name] = true
			}
		}
	}
	for _, key := range []string{"toolConfig", "tool_config"} {
		if !r.has(key) {
			continue
		}
		o, err := object(r[key], key)
		if err != nil {
			return err
		}
		fc := o["functionCallingConfig"]
		if fc == nil {
			fc = o["function_calling_config"]
		}
		if fc == nil {
			continue
		}
		c, err := object(fc, "functionCallingConfig")
		if err != nil {
			return err
		}
		mode, _, _ := c.str("mode", "functionCallingConfig")
		if !slices.Contains([]string{"", "AUTO", "ANY", "NONE", "VALIDATED", "MODE_UNSPECIFIED"}, mode) {
			return fmt.Errorf("Invalid value at 'tool_config.function_calling_config.mode' (%s)", mode)
		}
		if c.has("allowedFunctionNames") {
			if mode != "ANY" && mode != "VALIDATED" {
				return fmt.Errorf("* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: " +
					"allowed_function_names may only be set when mode is ANY or VALIDATED.")
			}
			var names []string
			json.Unmarshal(c["allowedFunctionNames"], &names)
			for _, n := range names {
				if !declared[n] {
					return fmt.Errorf("* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: "+
						"function %q is not declared in tools.", n)
				}
			}
		}
	}
	for _, key := range []string{"generationConfig", "generation_config"} {
		if !r.has(key) {
			continue
		}
		o, err := object(r[key], key)
		if err != nil {
			return err
		}
		mime, _, _ := o.str("responseMimeType", key)
		if (o.has("responseSchema") || o.has("responseJsonSchema") || o.has("response_json_schema")) &&
			mime != "application/json" && mime != "text/x.enum" {
			return fmt.Errorf("* GenerateContentRequest.generation_config.response_mime_type: " +
				"response_mime_type must be 'application/json' (or 'text/x.enum') when a response schema is set.")
		}
	}
	for _, key := range []string{"systemInstruction", "system_instruction"} {
		if !r.has(key) {
			continue
		}
		o, err := object(r[key], key)
		if err != nil {
			return err
		}
		if _, err := geminiParts(o, key); err != nil {
			return err
		}
	}
	contents, err := array(r["contents"], "contents")
	if err != nil {
		return fmt.Errorf("* GenerateContentRequest.contents: contents is not specified")
	}
	if len(contents) == 0 {
		return fmt.Errorf("* GenerateContentRequest.contents: contents is not specified")
	}
	prevRole := ""
	var calls []string // the functionCall names of the previous turn
	for i, c := range contents {
		what := fmt.Sprintf("contents[%d]", i)
		o, err := object(c, what)
		if err != nil {
			return err
		}
		if err := onlyKeys(o, what, "role", "parts"); err != nil {
			return fmt.Errorf("Invalid JSON payload received. %v", err)
		}
		role, _, _ := o.str("role", what)
		if role != "user" && role != "model" && !(role == "" && len(contents) == 1) {
			return fmt.Errorf("Please use a valid role: user, model. (%s.role %q)", what, role)
		}
		kinds, err := geminiParts(o, what)
		if err != nil {
			return err
		}
		var theseCalls, responses []string
		for _, k := range kinds {
			switch k.kind {
			case "functionCall":
				if role != "model" {
					return fmt.Errorf("* GenerateContentRequest.%s: a functionCall part is only allowed in a model turn", what)
				}
				if prevRole != "user" {
					return fmt.Errorf("Please ensure that function call turn comes immediately after a user turn or after a function response turn.")
				}
				theseCalls = append(theseCalls, k.name)
			case "functionResponse":
				if role != "user" {
					return fmt.Errorf("* GenerateContentRequest.%s: a functionResponse part is only allowed in a user turn", what)
				}
				if len(calls) == 0 {
					return fmt.Errorf("Please ensure that function response turn comes immediately after a function call turn.")
				}
				responses = append(responses, k.name)
			}
		}
		if len(calls) > 0 {
			if len(responses) != len(calls) {
				return fmt.Errorf("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
			}
			for _, n := range responses {
				if !slices.Contains(calls, n) {
					return fmt.Errorf("* GenerateContentRequest.%s: functionResponse %q answers no functionCall of the turn before", what, n)
				}
			}
		}
		calls, prevRole = theseCalls, role
	}
	return nil
}

// geminiPart is what one part holds, and the function it names.
type geminiPart struct{ kind, name string }

// geminiParts checks a content's parts: at least one, each holding
// exactly one thing, a function call or response with a name.
func geminiParts(o obj, what string) ([]geminiPart, error) {
	ps, err := array(o["parts"], what+".parts")
	if err != nil {
		return nil, fmt.Errorf("* GenerateContentRequest.%s.parts: contents.parts must not be empty.", what)
	}
	if len(ps) == 0 {
		return nil, fmt.Errorf("* GenerateContentRequest.%s.parts: contents.parts must not be empty.", what)
	}
	var out []geminiPart
	for i, p := range ps {
		pw := fmt.Sprintf("%s.parts[%d]", what, i)
		po, err := object(p, pw)
		if err != nil {
			return nil, err
		}
		k, err := exactlyOne(po, pw, geminiPartKinds, "thought", "thoughtSignature", "thought_signature", "videoMetadata")
		if err != nil {
			return nil, fmt.Errorf("* GenerateContentRequest.%s: %v", pw, err)
		}
		gp := geminiPart{kind: k}
		if k == "inlineData" || k == "inline_data" {
			d, err := object(po[k], pw+".inlineData")
			if err != nil {
				return nil, err
			}
			mt, _, _ := d.str("mimeType", pw)
			if data, _, _ := d.str("data", pw); mt == "" || data == "" {
				return nil, fmt.Errorf("* GenerateContentRequest.%s.inline_data: mime_type and data are required", pw)
			}
		}
		if key, ok := geminiFunctionKey(po); ok {
			gp.kind = key
			f, err := object(firstOf(po, key), pw+"."+key)
			if err != nil {
				return nil, err
			}
			if gp.name, _, _ = f.str("name", pw); gp.name == "" {
				return nil, fmt.Errorf("* GenerateContentRequest.%s.%s.name: Name cannot be empty.", pw, key)
			}
			if key == "functionResponse" {
				if _, err := object(f["response"], pw+".functionResponse.response"); err != nil {
					return nil, fmt.Errorf("* GenerateContentRequest.%s.functionResponse.response: must be a JSON object", pw)
				}
			}
		}
		out = append(out, gp)
	}
	return out, nil
}

// geminiFunctionKey returns "functionCall" or "functionResponse" when
// the part holds one, in either spelling.
func geminiFunctionKey(po obj) (string, bool) {
	switch {
	case po.has("functionCall") || po.has("function_call"):
		return "functionCall", true
	case po.has("functionResponse") || po.has("function_response"):
		return "functionResponse", true
	}
	return "", false
}

// firstOf returns a function part's member in either spelling.
func firstOf(po obj, key string) json.RawMessage {
	if v, ok := po[key]; ok {
		return v
	}
	return po[map[string]string{"functionCall": "function_call", "functionResponse": "function_response"}[key]]
}

// ---- Bedrock Converse ----

// converseBlocks are the content blocks a Converse message may hold.
var converseBlocks = []string{"text", "image", "document", "video", "toolUse", "toolResult", "guardContent",
	"cachePoint", "reasoningContent", "citationsContent"}

// checkConverse checks a Converse request: no unknown member; messages
// of roles user and assistant, alternating from a user turn, each block
// holding one thing; a toolUse only in an assistant turn, answered by a
// toolResult of its id in the next user turn, every toolResult answering
// one; a toolConfig whenever the messages hold toolUse or toolResult,
// its tools toolSpecs with a name and inputSchema.json, its toolChoice
// one of auto, any and tool (of a tool it has).
func checkConverse(body []byte) error {
	r, err := object(body, "body")
	if err != nil {
		return err
	}
	if err := onlyKeys(r, "body", "messages", "system", "inferenceConfig", "toolConfig", "guardrailConfig",
		"additionalModelRequestFields", "additionalModelResponseFieldPaths", "promptVariables", "requestMetadata",
		"performanceConfig", "outputConfig"); err != nil {
		return err
	}
	if r.has("inferenceConfig") {
		o, err := object(r["inferenceConfig"], "inferenceConfig")
		if err != nil {
			return err
		}
		if err := onlyKeys(o, "inferenceConfig", "maxTokens", "temperature", "topP", "stopSequences"); err != nil {
			return err
		}
	}
	if r.has("system") {
		ss, err := array(r["system"], "system")
		if err != nil {
			return err
		}
		for i, s := range ss {
			o, err := object(s, fmt.Sprintf("system[%d]", i))
			if err != nil {
				return err
			}
			if _, err := exactlyOne(o, fmt.Sprintf("system[%d]", i), []string{"text", "cachePoint", "guardContent"}); err != nil {
				return err
			}
		}
	}
	tools := map[string]bool{}
	hasToolConfig := r.has("toolConfig")
	if hasToolConfig {
		tc, err := object(r["toolConfig"], "toolConfig")
		if err != nil {
			return err
		}
		if err := onlyKeys(tc, "toolConfig", "tools", "toolChoice"); err != nil {
			return err
		}
		ts, err := array(tc["tools"], "toolConfig.tools")
		if err != nil || len(ts) == 0 {
			return fmt.Errorf("1 validation error detected: Value at 'toolConfig.tools' failed to satisfy constraint: Member must have length greater than or equal to 1")
		}
		for i, t := range ts {
			what := fmt.Sprintf("toolConfig.tools[%d]", i)
			o, err := object(t, what)
			if err != nil {
				return err
			}
			k, err := exactlyOne(o, what, []string{"toolSpec", "cachePoint", "systemTool"})
			if err != nil {
				return err
			}
			if k != "toolSpec" {
				continue
			}
			spec, err := object(o["toolSpec"], what+".toolSpec")
			if err != nil {
				return err
			}
			if err := onlyKeys(spec, what+".toolSpec", "name", "description", "inputSchema", "strict"); err != nil {
				return err
			}
			name, _, _ := spec.str("name", what)
			if !toolName.MatchString(name) {
				return fmt.Errorf("Value at '%s.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+", what)
			}
			is, err := object(spec["inputSchema"], what+".toolSpec.inputSchema")
			if err != nil {
				return fmt.Errorf("Value at '%s.toolSpec.inputSchema' failed to satisfy constraint: Member must not be null", what)
			}
			if _, err := exactlyOne(is, what+".toolSpec.inputSchema", []string{"json"}); err != nil {
				return err
			}
			if err := jsonSchemaObject(is["json"], what+".toolSpec.inputSchema.json"); err != nil {
				return fmt.Errorf("The value at %s.toolSpec.inputSchema.json.type must be object", what)
			}
			tools[name] = true
		}
		if tc.has("toolChoice") {
			c, err := object(tc["toolChoice"], "toolConfig.toolChoice")
			if err != nil {
				return err
			}
			k, err := exactlyOne(c, "toolConfig.toolChoice", []string{"auto", "any", "tool"})
			if err != nil {
				return err
			}
			if k == "tool" {
				t, err := object(c["tool"], "toolConfig.toolChoice.tool")
				if err != nil {
					return err
				}
				if n, _, _ := t.str("name", "toolChoice.tool"); !tools[n] {
					return fmt.Errorf("The tool %q named by toolConfig.toolChoice is not in toolConfig.tools.", n)
				}
			}
		}
	}
	msgs, err := array(r["messages"], "messages")
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		return fmt.Errorf("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	var pending []string
	prev := ""
	for i, m := range msgs {
		what := fmt.Sprintf("messages.%d", i)
		o, err := object(m, what)
		if err != nil {
			return err
		}
		if err := onlyKeys(o, what, "role", "content"); err != nil {
			return err
		}
		role, _, _ := o.str("role", what)
		if role != "user" && role != "assistant" {
			return fmt.Errorf("1 validation error detected: Value at '%s.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", what)
		}
		if i == 0 && role != "user" {
			return fmt.Errorf("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
		}
		if role == prev {
			return fmt.Errorf("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		prev = role
		blocks, err := array(o["content"], what+".content")
		if err != nil {
			return err
		}
		if len(blocks) == 0 {
			return fmt.Errorf("The content field in the Message object at %s is empty. Add a ContentBlock object to the content field and try again.", what)
		}
		var uses, results []string
		for j, b := range blocks {
			bw := fmt.Sprintf("%s.content.%d", what, j)
			bo, err := object(b, bw)
			if err != nil {
				return err
			}
			k, err := exactlyOne(bo, bw, converseBlocks)
			if err != nil {
				return err
			}
			switch k {
			case "text":
				if s, _, _ := bo.str("text", bw); s == "" {
					return fmt.Errorf("The text field in the ContentBlock object at %s is blank. Add text to the text field, and try again.", bw)
				}
			case "image":
				img, err := object(bo["image"], bw+".image")
				if err != nil {
					return err
				}
				if f, _, _ := img.str("format", bw); !slices.Contains([]string{"png", "jpeg", "gif", "webp"}, f) {
					return fmt.Errorf("1 validation error detected: Value at '%s.image.format' failed to satisfy constraint: "+
						"Member must satisfy enum value set: [png, jpeg, gif, webp]", bw)
				}
				src, err := object(img["source"], bw+".image.source")
				if err != nil {
					return err
				}
				if _, err := exactlyOne(src, bw+".image.source", []string{"bytes", "s3Location"}); err != nil {
					return err
				}
			case "toolUse", "toolResult":
				if !hasToolConfig {
					return fmt.Errorf("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
				}
				t, err := object(bo[k], bw+"."+k)
				if err != nil {
					return err
				}
				id, _, _ := t.str("toolUseId", bw)
				if id == "" {
					return fmt.Errorf("Value at '%s.%s.toolUseId' failed to satisfy constraint: Member must not be null", bw, k)
				}
				if k == "toolUse" {
					if role != "assistant" {
						return fmt.Errorf("%s: toolUse blocks are only allowed in assistant messages", bw)
					}
					name, _, _ := t.str("name", bw)
					if !toolName.MatchString(name) {
						return fmt.Errorf("Value at '%s.toolUse.name' failed to satisfy constraint", bw)
					}
					if !t.has("input") {
						return fmt.Errorf("Value at '%s.toolUse.input' failed to satisfy constraint: Member must not be null", bw)
					}
					uses = append(uses, id)
					continue
				}
				if role != "user" {
					return fmt.Errorf("%s: toolResult blocks are only allowed in user messages", bw)
				}
				if !slices.Contains(pending, id) {
					return fmt.Errorf("The toolUseId %s in the toolResult at %s matches no toolUse of the previous turn.", id, bw)
				}
				rc, err := array(t["content"], bw+".toolResult.content")
				if err != nil {
					return err
				}
				if len(rc) == 0 { // some of Bedrock's models take none; one that is refused wedges the conversation
					return fmt.Errorf("The content field at %s.toolResult cannot be empty. Add a ToolResultContentBlock and try again.", bw)
				}
				for k, c := range rc {
					if co, err := object(c, bw); err == nil && co.has("text") {
						if s, _, _ := co.str("text", bw); strings.TrimSpace(s) == "" {
							return fmt.Errorf("The text field in the ToolResultContentBlock object at %s.toolResult.content.%d is blank. Add text to the text field, and try again.", bw, k)
						}
					}
				}
				results = append(results, id)
			}
		}
		if role == "user" && len(pending) > 0 {
			if len(results) != len(pending) {
				return fmt.Errorf("Expected toolResult blocks at %s for the following Ids: %s", what, strings.Join(pending, ", "))
			}
		}
		pending = uses
	}
	return nil
}
