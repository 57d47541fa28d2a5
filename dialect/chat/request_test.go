package chat

import (
	"encoding/json"
	"errors"
	"testing"
)

// requestCase is one request in the model and as each API writes it.
type requestCase struct {
	name string
	req  Request
	// wire is the request as each API writes it, or "error: …" where it
	// cannot.
	wire map[string]string
	// decoded is what each API's decoder reads back from its wire, where
	// it is not req (what the API does not carry).
	decoded map[string]*Request
	// across is what a request read from one API ("openai->anthropic")
	// becomes in another, where that is not the other's wire.
	across map[string]string
}

// weatherParams is the JSON schema of get_weather's arguments.
const weatherParams = `{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`

var weatherTool = Tool{Name: "get_weather", Description: "Get the weather", Parameters: json.RawMessage(weatherParams)}

func user(parts ...Part) Message      { return Message{Role: RoleUser, Parts: parts} }
func assistant(parts ...Part) Message { return Message{Role: RoleAssistant, Parts: parts} }

func call(id, name, args string) Part {
	return Part{Type: PartToolCall, ToolCall: &ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}}
}

func result(id string, isError bool, text string) Part {
	return Part{Type: PartToolResult, ToolResult: &ToolResult{CallID: id, Content: []Part{Text(text)}, IsError: isError}}
}

// Tool definitions as each API writes get_weather.
const (
	oaTools = `"tools":[{"type":"function","function":{"name":"get_weather","description":"Get the weather","parameters":` + weatherParams + `}}]`
	anTools = `"tools":[{"name":"get_weather","description":"Get the weather","input_schema":` + weatherParams + `}]`
	geTools = `"tools":[{"functionDeclarations":[{"name":"get_weather","description":"Get the weather","parametersJsonSchema":` + weatherParams + `}]}]`
	brTools = `{"toolSpec":{"name":"get_weather","description":"Get the weather","inputSchema":{"json":` + weatherParams + `}}}`
)

// The conversation of the multi-turn case: a question, two tool calls
// in parallel, their results, an answer, a thanks.
var multiTurn = []Message{
	user(Text("Weather in Paris and Rome?")),
	assistant(Text("Checking."), call("call_0", "get_weather", `{"city":"Paris"}`), call("call_1", "get_weather", `{"city":"Rome"}`)),
	user(result("call_0", false, `{"temp_c":18}`), result("call_1", false, `{"temp_c":21}`)),
	assistant(Text("Paris 18C, Rome 21C.")),
	user(Text("Thanks")),
}

var requestCases = []requestCase{
	{
		name: "text",
		req: Request{Model: "m", System: []Part{Text("Be brief.")}, Messages: []Message{user(Text("Hello"))},
			MaxTokens: 100, Temperature: ptr(0.5), TopP: ptr(0.9), Stop: []string{"END"}},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello"}],
				"stop":["END"],"temperature":0.5,"top_p":0.9,"max_completion_tokens":100}`,
			"anthropic": `{"model":"m","max_tokens":100,"system":"Be brief.",
				"messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}],
				"stop_sequences":["END"],"temperature":0.5,"top_p":0.9}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Hello"}]}],"systemInstruction":{"parts":[{"text":"Be brief."}]},
				"generationConfig":{"stopSequences":["END"],"temperature":0.5,"topP":0.9,"maxOutputTokens":100}}`,
			"bedrock": `{"messages":[{"role":"user","content":[{"text":"Hello"}]}],"system":[{"text":"Be brief."}],
				"inferenceConfig":{"maxTokens":100,"temperature":0.5,"topP":0.9,"stopSequences":["END"]}}`,
		},
	},
	{
		name: "tools offered",
		req: Request{Model: "m", Messages: []Message{user(Text("Weather in Paris?"))}, Tools: []Tool{weatherTool},
			ToolChoice: ToolChoice{Mode: ToolAuto}, MaxTokens: 200},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Weather in Paris?"}],` + oaTools + `,
				"tool_choice":"auto","max_completion_tokens":200}`,
			"anthropic": `{"model":"m","max_tokens":200,"messages":[{"role":"user","content":[{"type":"text","text":"Weather in Paris?"}]}],
				` + anTools + `,"tool_choice":{"type":"auto"}}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Weather in Paris?"}]}],` + geTools + `,
				"toolConfig":{"functionCallingConfig":{"mode":"AUTO"}},"generationConfig":{"maxOutputTokens":200}}`,
			"bedrock": `{"messages":[{"role":"user","content":[{"text":"Weather in Paris?"}]}],"inferenceConfig":{"maxTokens":200},
				"toolConfig":{"tools":[` + brTools + `],"toolChoice":{"auto":{}}}}`,
		},
	},
	{
		name: "multi-turn with parallel tool calls and their results",
		req:  Request{Model: "m", Messages: multiTurn, Tools: []Tool{weatherTool}, MaxTokens: 300},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[
				{"role":"user","content":"Weather in Paris and Rome?"},
				{"role":"assistant","content":"Checking.","tool_calls":[
					{"id":"call_0","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
					{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},
				{"role":"tool","tool_call_id":"call_0","content":"{\"temp_c\":18}"},
				{"role":"tool","tool_call_id":"call_1","content":"{\"temp_c\":21}"},
				{"role":"assistant","content":"Paris 18C, Rome 21C."},
				{"role":"user","content":"Thanks"}],` + oaTools + `,"max_completion_tokens":300}`,
			"anthropic": `{"model":"m","max_tokens":300,"messages":[
				{"role":"user","content":[{"type":"text","text":"Weather in Paris and Rome?"}]},
				{"role":"assistant","content":[{"type":"text","text":"Checking."},
					{"type":"tool_use","id":"call_0","name":"get_weather","input":{"city":"Paris"}},
					{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Rome"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_0","content":"{\"temp_c\":18}"},
					{"type":"tool_result","tool_use_id":"call_1","content":"{\"temp_c\":21}"}]},
				{"role":"assistant","content":[{"type":"text","text":"Paris 18C, Rome 21C."}]},
				{"role":"user","content":[{"type":"text","text":"Thanks"}]}],` + anTools + `}`,
			"gemini": `{"contents":[
				{"role":"user","parts":[{"text":"Weather in Paris and Rome?"}]},
				{"role":"model","parts":[{"text":"Checking."},{"functionCall":{"name":"get_weather","args":{"city":"Paris"}}},
					{"functionCall":{"name":"get_weather","args":{"city":"Rome"}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp_c":18}}},
					{"functionResponse":{"name":"get_weather","response":{"temp_c":21}}}]},
				{"role":"model","parts":[{"text":"Paris 18C, Rome 21C."}]},
				{"role":"user","parts":[{"text":"Thanks"}]}],` + geTools + `,"generationConfig":{"maxOutputTokens":300}}`,
			"bedrock": `{"messages":[
				{"role":"user","content":[{"text":"Weather in Paris and Rome?"}]},
				{"role":"assistant","content":[{"text":"Checking."},
					{"toolUse":{"toolUseId":"call_0","name":"get_weather","input":{"city":"Paris"}}},
					{"toolUse":{"toolUseId":"call_1","name":"get_weather","input":{"city":"Rome"}}}]},
				{"role":"user","content":[{"toolResult":{"toolUseId":"call_0","content":[{"text":"{\"temp_c\":18}"}]}},
					{"toolResult":{"toolUseId":"call_1","content":[{"text":"{\"temp_c\":21}"}]}}]},
				{"role":"assistant","content":[{"text":"Paris 18C, Rome 21C."}]},
				{"role":"user","content":[{"text":"Thanks"}]}],
				"inferenceConfig":{"maxTokens":300},"toolConfig":{"tools":[` + brTools + `]}}`,
		},
	},
	{
		name: "a failed tool and a text result",
		req: Request{Model: "m", Tools: []Tool{weatherTool}, MaxTokens: 50, Messages: []Message{
			user(Text("Weather in Oslo?")),
			assistant(call("toolu_1", "get_weather", `{"city":"Oslo"}`)),
			user(result("toolu_1", true, "service down"), Text("Try again?")),
		}},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Weather in Oslo?"},
				{"role":"assistant","tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
				{"role":"tool","tool_call_id":"toolu_1","content":"service down"},
				{"role":"user","content":"Try again?"}],` + oaTools + `,"max_completion_tokens":50}`,
			"anthropic": `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"Weather in Oslo?"}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"service down","is_error":true},
					{"type":"text","text":"Try again?"}]}],` + anTools + `}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Weather in Oslo?"}]},
				{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"error":"service down"}}},{"text":"Try again?"}]}],
				` + geTools + `,"generationConfig":{"maxOutputTokens":50}}`,
			"bedrock": `{"messages":[{"role":"user","content":[{"text":"Weather in Oslo?"}]},
				{"role":"assistant","content":[{"toolUse":{"toolUseId":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}}]},
				{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"service down"}],"status":"error"}},
					{"text":"Try again?"}]}],"inferenceConfig":{"maxTokens":50},"toolConfig":{"tools":[` + brTools + `]}}`,
		},
		decoded: map[string]*Request{
			// OpenAI has no is_error; a tool message and the user's after it
			// are two messages.
			"openai": {Model: "m", Tools: []Tool{weatherTool}, MaxTokens: 50, Messages: []Message{
				user(Text("Weather in Oslo?")),
				assistant(call("toolu_1", "get_weather", `{"city":"Oslo"}`)),
				user(result("toolu_1", false, "service down")),
				user(Text("Try again?")),
			}},
			// Gemini has no ids and no error flag: the response is read back
			// as its JSON.
			"gemini": {Tools: []Tool{weatherTool}, MaxTokens: 50, Messages: []Message{
				user(Text("Weather in Oslo?")),
				assistant(call("call_0", "get_weather", `{"city":"Oslo"}`)),
				user(result("call_0", false, `{"error":"service down"}`), Text("Try again?")),
			}},
		},
		across: map[string]string{
			"openai->anthropic": `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"Weather in Oslo?"}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"service down"},
					{"type":"text","text":"Try again?"}]}],` + anTools + `}`,
			"openai->gemini": `{"contents":[{"role":"user","parts":[{"text":"Weather in Oslo?"}]},
				{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"service down"}}},{"text":"Try again?"}]}],
				` + geTools + `,"generationConfig":{"maxOutputTokens":50}}`,
			"openai->bedrock": `{"messages":[{"role":"user","content":[{"text":"Weather in Oslo?"}]},
				{"role":"assistant","content":[{"toolUse":{"toolUseId":"toolu_1","name":"get_weather","input":{"city":"Oslo"}}}]},
				{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_1","content":[{"text":"service down"}]}},
					{"text":"Try again?"}]}],"inferenceConfig":{"maxTokens":50},"toolConfig":{"tools":[` + brTools + `]}}`,
		},
	},
	{
		name: "forced tool_choice",
		req: Request{Model: "m", Messages: []Message{user(Text("Paris"))}, Tools: []Tool{weatherTool},
			ToolChoice: ToolChoice{Mode: ToolNamed, Name: "get_weather"}, MaxTokens: 20},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Paris"}],` + oaTools + `,
				"tool_choice":{"type":"function","function":{"name":"get_weather"}},"max_completion_tokens":20}`,
			"anthropic": `{"model":"m","max_tokens":20,"messages":[{"role":"user","content":[{"type":"text","text":"Paris"}]}],
				` + anTools + `,"tool_choice":{"type":"tool","name":"get_weather"}}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Paris"}]}],` + geTools + `,
				"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}},
				"generationConfig":{"maxOutputTokens":20}}`,
			"bedrock": `{"messages":[{"role":"user","content":[{"text":"Paris"}]}],"inferenceConfig":{"maxTokens":20},
				"toolConfig":{"tools":[` + brTools + `],"toolChoice":{"tool":{"name":"get_weather"}}}}`,
		},
	},
	{
		name: "tool_choice required",
		req: Request{Model: "m", Messages: []Message{user(Text("Paris"))}, Tools: []Tool{weatherTool},
			ToolChoice: ToolChoice{Mode: ToolRequired}, MaxTokens: 20},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Paris"}],` + oaTools + `,
				"tool_choice":"required","max_completion_tokens":20}`,
			"anthropic": `{"model":"m","max_tokens":20,"messages":[{"role":"user","content":[{"type":"text","text":"Paris"}]}],
				` + anTools + `,"tool_choice":{"type":"any"}}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Paris"}]}],` + geTools + `,
				"toolConfig":{"functionCallingConfig":{"mode":"ANY"}},"generationConfig":{"maxOutputTokens":20}}`,
			"bedrock": `{"messages":[{"role":"user","content":[{"text":"Paris"}]}],"inferenceConfig":{"maxTokens":20},
				"toolConfig":{"tools":[` + brTools + `],"toolChoice":{"any":{}}}}`,
		},
	},
	{
		name: "tool_choice none",
		req: Request{Model: "m", Messages: []Message{user(Text("Paris"))}, Tools: []Tool{weatherTool},
			ToolChoice: ToolChoice{Mode: ToolNone}, MaxTokens: 20},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Paris"}],` + oaTools + `,
				"tool_choice":"none","max_completion_tokens":20}`,
			"anthropic": `{"model":"m","max_tokens":20,"messages":[{"role":"user","content":[{"type":"text","text":"Paris"}]}],
				` + anTools + `,"tool_choice":{"type":"none"}}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Paris"}]}],` + geTools + `,
				"toolConfig":{"functionCallingConfig":{"mode":"NONE"}},"generationConfig":{"maxOutputTokens":20}}`,
			// Bedrock has no none: the tools are left out.
			"bedrock": `{"messages":[{"role":"user","content":[{"text":"Paris"}]}],"inferenceConfig":{"maxTokens":20}}`,
		},
		decoded: map[string]*Request{"bedrock": {Messages: []Message{user(Text("Paris"))}, MaxTokens: 20}},
	},
	{
		name: "tool_choice none after tool calls",
		req: Request{Model: "m", Tools: []Tool{weatherTool}, ToolChoice: ToolChoice{Mode: ToolNone}, MaxTokens: 20,
			Messages: []Message{user(Text("Oslo")), assistant(call("c1", "get_weather", `{}`)), user(result("c1", false, "cold"))}},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Oslo"},
				{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"c1","content":"cold"}],` + oaTools + `,"tool_choice":"none","max_completion_tokens":20}`,
			"anthropic": `{"model":"m","max_tokens":20,"messages":[{"role":"user","content":[{"type":"text","text":"Oslo"}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"get_weather","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"cold"}]}],
				` + anTools + `,"tool_choice":{"type":"none"}}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Oslo"}]},
				{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"cold"}}}]}],
				` + geTools + `,"toolConfig":{"functionCallingConfig":{"mode":"NONE"}},"generationConfig":{"maxOutputTokens":20}}`,
			"bedrock": "error: Bedrock cannot take tool_choice none with tool calls in the conversation",
		},
		decoded: map[string]*Request{"gemini": {Tools: []Tool{weatherTool}, ToolChoice: ToolChoice{Mode: ToolNone}, MaxTokens: 20,
			Messages: []Message{user(Text("Oslo")), assistant(call("call_0", "get_weather", `{}`)), user(result("call_0", false, `{"result":"cold"}`))}}},
	},
	{
		name: "a JSON schema",
		req: Request{Model: "m", Messages: []Message{user(Text("Weather as JSON"))}, MaxTokens: 100,
			Format: &Format{Type: FormatJSONSchema, Name: "weather", Schema: json.RawMessage(weatherParams), Strict: ptr(true)}},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Weather as JSON"}],
				"response_format":{"type":"json_schema","json_schema":{"name":"weather","schema":` + weatherParams + `,"strict":true}},
				"max_completion_tokens":100}`,
			"anthropic": `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"Weather as JSON"}]}],
				"output_config":{"format":{"type":"json_schema","schema":` + weatherParams + `}}}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Weather as JSON"}]}],
				"generationConfig":{"maxOutputTokens":100,"responseMimeType":"application/json","responseJsonSchema":` + weatherParams + `}}`,
			"bedrock": `{"messages":[{"role":"user","content":[{"text":"Weather as JSON"}]}],"inferenceConfig":{"maxTokens":100},
				"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":` +
				string(rawString(weatherParams)) + `,"name":"weather"}}}}}`,
		},
		decoded: map[string]*Request{
			"anthropic": {Model: "m", Messages: []Message{user(Text("Weather as JSON"))}, MaxTokens: 100,
				Format: &Format{Type: FormatJSONSchema, Schema: json.RawMessage(weatherParams)}},
			"gemini": {Messages: []Message{user(Text("Weather as JSON"))}, MaxTokens: 100,
				Format: &Format{Type: FormatJSONSchema, Schema: json.RawMessage(weatherParams)}},
			"bedrock": {Messages: []Message{user(Text("Weather as JSON"))}, MaxTokens: 100,
				Format: &Format{Type: FormatJSONSchema, Name: "weather", Schema: json.RawMessage(weatherParams)}},
		},
		across: map[string]string{
			// Anthropic's format has no name; OpenAI requires one.
			"anthropic->openai": `{"model":"m","messages":[{"role":"user","content":"Weather as JSON"}],
				"response_format":{"type":"json_schema","json_schema":{"name":"response","schema":` + weatherParams + `}},
				"max_completion_tokens":100}`,
			"anthropic->bedrock": `{"messages":[{"role":"user","content":[{"text":"Weather as JSON"}]}],"inferenceConfig":{"maxTokens":100},
				"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"schema":` +
				string(rawString(weatherParams)) + `}}}}}`,
		},
	},
	{
		name: "a JSON object",
		req: Request{Model: "m", Messages: []Message{user(Text("JSON please"))}, MaxTokens: 100,
			Format: &Format{Type: FormatJSONObject}},
		wire: map[string]string{
			"openai":    `{"model":"m","messages":[{"role":"user","content":"JSON please"}],"response_format":{"type":"json_object"},"max_completion_tokens":100}`,
			"anthropic": "error: Anthropic cannot take response format json_object",
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"JSON please"}]}],
				"generationConfig":{"maxOutputTokens":100,"responseMimeType":"application/json"}}`,
			"bedrock": "error: Bedrock cannot take response format json_object",
		},
	},
	{
		name: "images",
		req: Request{Model: "m", MaxTokens: 10, Messages: []Message{user(Text("What is this?"),
			Part{Type: PartImage, Image: &Image{MediaType: "image/png", Data: "iVBORw0KGgo="}})}},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}],"max_completion_tokens":10}`,
			"anthropic": `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"What is this?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}}]}],
				"generationConfig":{"maxOutputTokens":10}}`,
			"bedrock": `{"messages":[{"role":"user","content":[{"text":"What is this?"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}]}],
				"inferenceConfig":{"maxTokens":10}}`,
		},
	},
	{
		name: "an image by URL",
		req: Request{Model: "m", MaxTokens: 10, Messages: []Message{user(
			Part{Type: PartImage, Image: &Image{URL: "https://example.com/cat.png"}})}},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}],
				"max_completion_tokens":10}`,
			"anthropic": `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[
				{"type":"image","source":{"type":"url","url":"https://example.com/cat.png"}}]}]}`,
			"gemini":  "error: Gemini cannot take an image by URL without its media type",
			"bedrock": "error: Bedrock cannot take an image by URL",
		},
	},
	{
		name: "cache breakpoints",
		req: Request{Model: "m", MaxTokens: 10,
			System:   []Part{{Type: PartText, Text: "A long manual.", Cache: &Cache{}}},
			Tools:    []Tool{{Name: "get_weather", Description: "Get the weather", Parameters: json.RawMessage(weatherParams), Cache: &Cache{}}},
			Messages: []Message{user(Part{Type: PartText, Text: "Question", Cache: &Cache{TTL: "5m"}})}},
		wire: map[string]string{
			// OpenAI and Gemini cache on their own and take no breakpoint.
			"openai": `{"model":"m","messages":[{"role":"system","content":"A long manual."},{"role":"user","content":"Question"}],
				` + oaTools + `,"max_completion_tokens":10}`,
			"anthropic": `{"model":"m","max_tokens":10,"system":[{"type":"text","text":"A long manual.","cache_control":{"type":"ephemeral"}}],
				"messages":[{"role":"user","content":[{"type":"text","text":"Question","cache_control":{"type":"ephemeral","ttl":"5m"}}]}],
				"tools":[{"name":"get_weather","description":"Get the weather","input_schema":` + weatherParams + `,"cache_control":{"type":"ephemeral"}}]}`,
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Question"}]}],"systemInstruction":{"parts":[{"text":"A long manual."}]},
				` + geTools + `,"generationConfig":{"maxOutputTokens":10}}`,
			"bedrock": `{"messages":[{"role":"user","content":[{"text":"Question"},{"cachePoint":{"type":"default"}}]}],
				"system":[{"text":"A long manual."},{"cachePoint":{"type":"default"}}],"inferenceConfig":{"maxTokens":10},
				"toolConfig":{"tools":[` + brTools + `,{"cachePoint":{"type":"default"}}]}}`,
		},
		decoded: map[string]*Request{
			"openai": {Model: "m", MaxTokens: 10, System: []Part{Text("A long manual.")}, Tools: []Tool{weatherTool},
				Messages: []Message{user(Text("Question"))}},
			"gemini": {MaxTokens: 10, System: []Part{Text("A long manual.")}, Tools: []Tool{weatherTool},
				Messages: []Message{user(Text("Question"))}},
			"bedrock": {MaxTokens: 10,
				System:   []Part{{Type: PartText, Text: "A long manual.", Cache: &Cache{}}},
				Tools:    []Tool{{Name: "get_weather", Description: "Get the weather", Parameters: json.RawMessage(weatherParams), Cache: &Cache{}}},
				Messages: []Message{user(Part{Type: PartText, Text: "Question", Cache: &Cache{}})}},
		},
		across: map[string]string{ // OpenAI's request carries no breakpoint
			"openai->anthropic": `{"model":"m","max_tokens":10,"system":"A long manual.",
				"messages":[{"role":"user","content":[{"type":"text","text":"Question"}]}],` + anTools + `}`,
			"openai->bedrock": `{"messages":[{"role":"user","content":[{"text":"Question"}]}],
				"system":[{"text":"A long manual."}],"inferenceConfig":{"maxTokens":10},"toolConfig":{"tools":[` + brTools + `]}}`,
		},
	},
	{
		name: "stream with usage",
		req:  Request{Model: "m", MaxTokens: 10, Messages: []Message{user(Text("Hi"))}, Stream: true, IncludeUsage: true},
		wire: map[string]string{
			"openai":    `{"model":"m","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":10,"stream":true,"stream_options":{"include_usage":true}}`,
			"anthropic": `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"stream":true}`,
			"gemini":    `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"maxOutputTokens":10}}`,
			"bedrock":   `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":10}}`,
		},
		decoded: map[string]*Request{ // the others report the usage unasked
			"anthropic": {Model: "m", MaxTokens: 10, Messages: []Message{user(Text("Hi"))}, Stream: true},
			"gemini":    {MaxTokens: 10, Messages: []Message{user(Text("Hi"))}},
			"bedrock":   {MaxTokens: 10, Messages: []Message{user(Text("Hi"))}},
		},
		across: map[string]string{ // the caller asks OpenAI for the usage when it wants it
			"anthropic->openai": `{"model":"m","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":10,"stream":true}`,
		},
	},
	{
		name: "sampling some APIs lack",
		req: Request{Model: "m", MaxTokens: 10, Messages: []Message{user(Text("Hi"))}, N: 2, Seed: ptr(int64(7)),
			PresencePenalty: ptr(0.5), FrequencyPenalty: ptr(0.25)},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Hi"}],"max_completion_tokens":10,"seed":7,
				"presence_penalty":0.5,"frequency_penalty":0.25,"n":2}`,
			"anthropic": "error: Anthropic cannot take n 2",
			"gemini": `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"candidateCount":2,"maxOutputTokens":10,
				"seed":7,"presencePenalty":0.5,"frequencyPenalty":0.25}}`,
			"bedrock": "error: Bedrock cannot take seed",
		},
	},
	{
		name: "top_k",
		req:  Request{Model: "m", MaxTokens: 10, Messages: []Message{user(Text("Hi"))}, TopK: ptr(int64(40))},
		wire: map[string]string{
			"openai":    "error: OpenAI cannot take top_k",
			"anthropic": `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"top_k":40}`,
			"gemini":    `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"topK":40,"maxOutputTokens":10}}`,
			"bedrock":   "error: Bedrock cannot take top_k",
		},
	},
	{
		name: "no output limit",
		req:  Request{Model: "m", Messages: []Message{user(Text("Hi"))}},
		wire: map[string]string{
			"openai":    `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`,
			"anthropic": "error: Anthropic cannot take a request without max_tokens (it requires one)",
			"gemini":    `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`,
			"bedrock":   `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`,
		},
	},
	{
		name: "a temperature above 1",
		req:  Request{Model: "m", MaxTokens: 5, Messages: []Message{user(Text("Hi"))}, Temperature: ptr(1.5)},
		wire: map[string]string{
			"openai":    `{"model":"m","messages":[{"role":"user","content":"Hi"}],"temperature":1.5,"max_completion_tokens":5}`,
			"anthropic": "error: Anthropic cannot take temperature 1.5 (it takes 0 to 1)",
			"gemini":    `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"temperature":1.5,"maxOutputTokens":5}}`,
			"bedrock":   `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":5,"temperature":1.5}}`,
		},
	},
	{
		name: "one call at a time, for a user",
		req: Request{Model: "m", MaxTokens: 5, Messages: []Message{user(Text("Hi"))}, Tools: []Tool{weatherTool},
			ParallelToolCalls: ptr(false), User: "u-42"},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Hi"}],` + oaTools + `,"parallel_tool_calls":false,
				"max_completion_tokens":5,"user":"u-42"}`,
			"anthropic": `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],` + anTools + `,
				"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"metadata":{"user_id":"u-42"}}`,
			"gemini":  "error: Gemini cannot take parallel_tool_calls false",
			"bedrock": "error: Bedrock cannot take user",
		},
		decoded: map[string]*Request{"anthropic": {Model: "m", MaxTokens: 5, Messages: []Message{user(Text("Hi"))},
			Tools: []Tool{weatherTool}, ToolChoice: ToolChoice{Mode: ToolAuto}, ParallelToolCalls: ptr(false), User: "u-42"}},
		across: map[string]string{
			"anthropic->openai": `{"model":"m","messages":[{"role":"user","content":"Hi"}],` + oaTools + `,"tool_choice":"auto",
				"parallel_tool_calls":false,"max_completion_tokens":5,"user":"u-42"}`,
		},
	},
	{
		name: "a system message mid-conversation",
		req: Request{Model: "m", MaxTokens: 5, Messages: []Message{user(Text("Hi")), assistant(Text("Hello")),
			{Role: RoleSystem, Parts: []Part{Text("Now in French.")}}, user(Text("Bye"))}},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello"},
				{"role":"system","content":"Now in French."},{"role":"user","content":"Bye"}],"max_completion_tokens":5}`,
			"anthropic": "error: Anthropic cannot take a system message after the conversation began",
			"gemini":    "error: Gemini cannot take a system message after the conversation began",
			"bedrock":   "error: Bedrock cannot take a system message after the conversation began",
		},
	},
	{
		name: "another API's built-in tool and logprobs",
		req: Request{Model: "m", MaxTokens: 5, Messages: []Message{user(Text("News?"))}, Extras: []Extra{
			{Feature: FeatureBuiltinTool, Dialect: "openai", Name: "web_search_preview", Value: json.RawMessage(`{"type":"web_search_preview"}`)},
			{Feature: FeatureLogprobs, Dialect: "openai", Name: "logprobs", Value: json.RawMessage(`true`)}}},
		wire: map[string]string{
			"openai": `{"model":"m","messages":[{"role":"user","content":"News?"}],"tools":[{"type":"web_search_preview"}],
				"max_completion_tokens":5,"logprobs":true}`,
			"anthropic": "error: Anthropic cannot take OpenAI's built-in tool web_search_preview",
			"gemini":    "error: Gemini cannot take OpenAI's built-in tool web_search_preview",
			"bedrock":   "error: Bedrock cannot take OpenAI's built-in tool web_search_preview",
		},
	},
}

// decodedWant is what name's decoder reads back from its wire of c.
func (c *requestCase) decodedWant(name string) *Request {
	if r, ok := c.decoded[name]; ok {
		return r
	}
	r := c.req
	if pathModel(name) {
		r.Model, r.Stream = "", false
	}
	return &r
}

// TestEncodeRequest: the model written as each API's request, or the
// error that names what the API cannot take.
func TestEncodeRequest(t *testing.T) {
	for _, c := range requestCases {
		for _, name := range codecNames {
			want := c.wire[name]
			got, err := codecs[name].EncodeRequest(&c.req)
			if msg, isErr := isErrWant(want); isErr {
				checkErr(t, c.name+" "+name, err, msg)
				if err != nil && !errors.Is(err, ErrUnsupported) {
					t.Errorf("%s %s: %v is not ErrUnsupported", c.name, name, err)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s %s: %v", c.name, name, err)
				continue
			}
			checkJSON(t, c.name+" "+name, got, want)
		}
	}
}

// TestRequestRoundTrip: each API's wire read back is the model (or what
// the API carries of it), and written again is the same wire.
func TestRequestRoundTrip(t *testing.T) {
	for _, c := range requestCases {
		for _, name := range codecNames {
			wire := c.wire[name]
			if _, isErr := isErrWant(wire); isErr {
				continue
			}
			codec := codecs[name]
			r, err := codec.DecodeRequest([]byte(wire))
			if err != nil {
				t.Errorf("%s %s: decode: %v", c.name, name, err)
				continue
			}
			checkModel(t, c.name+" "+name+" decoded", r, c.decodedWant(name))
			again, err := codec.EncodeRequest(r)
			if err != nil {
				t.Errorf("%s %s: encode again: %v", c.name, name, err)
				continue
			}
			checkJSON(t, c.name+" "+name+" again", again, wire)
		}
	}
}

// TestTranslateRequest: a request of OpenAI or Anthropic (the SDKs agents
// are written against) written for every API: the target's own wire, or
// where the source carries less, what it does carry.
func TestTranslateRequest(t *testing.T) {
	for _, c := range requestCases {
		for _, src := range []string{"openai", "anthropic"} {
			in := c.wire[src]
			if _, isErr := isErrWant(in); isErr {
				continue
			}
			r, err := codecs[src].DecodeRequest([]byte(in))
			if err != nil {
				t.Errorf("%s %s: decode: %v", c.name, src, err)
				continue
			}
			for _, dst := range codecNames {
				if dst == src {
					continue
				}
				pair := src + "->" + dst
				want, ok := c.across[pair]
				if !ok {
					want = c.wire[dst]
				}
				got, err := codecs[dst].EncodeRequest(r)
				if msg, isErr := isErrWant(want); isErr {
					checkErr(t, c.name+" "+pair, err, msg)
					continue
				}
				if err != nil {
					t.Errorf("%s %s: %v", c.name, pair, err)
					continue
				}
				checkJSON(t, c.name+" "+pair, got, want)
			}
		}
	}
}
