package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	oshared "github.com/openai/openai-go/v3/shared"

	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

// The conformance table: a client of each ingress dialect, speaking
// through its official Go SDK, whose primary provider is down, answered
// by a fallback of each egress kind on a strict fake (fake.Provider.Strict,
// so that a request the provider would refuse fails as it would), for
// each case. CONFORMANCE.md at the repository root is the table as it
// last ran; the test fails when the two disagree. Regenerate it with
//
//	SLUICE_UPDATE_CONFORMANCE=1 go test -race -run Conformance ./internal/gateway/

// confUpdateEnv is the environment variable that rewrites CONFORMANCE.md
// from the run instead of checking it.
const confUpdateEnv = "SLUICE_UPDATE_CONFORMANCE"

// confFile is CONFORMANCE.md, from this package's directory.
const confFile = "../../CONFORMANCE.md"

var (
	confIngress = []string{"openai", "anthropic"}
	confEgress  = []string{"openai", "anthropic", "gemini", "bedrock"}
)

// confModels are the fallback's model, by its kind.
var confModels = map[string]string{
	"openai":           "gpt-4o-mini",
	"anthropic":        "claude-haiku-4-5",
	"gemini":           "gemini-2.0-flash",
	"bedrock":          bedrockModel,
	"azure":            "gpt-4o-mini-eu", // the deployment
	"vertex/anthropic": "claude-haiku-4-5@20251001",
	"vertex/google":    "gemini-2.0-flash",
}

// confVertexLocation is the project's location of the Vertex AI
// fallback, under which its publishers' models lie.
const confVertexLocation = "/v1/projects/p1/locations/us-east5"

// confCase is one row of the table.
type confCase struct {
	name   string
	stream bool
	// answer is what the fallback answers, in its dialect's shape.
	answer chat.Answer
	// script is the fallback's script; "" for "200".
	script string
	// want checks, beyond the answer, what the fallback was asked: the
	// request it received, read by its dialect's codec.
	sent func(r *chat.Request) error
	// unservable is a request no target of another dialect can serve.
	unservable bool
	// interleave has the fallback interleave its calls' arguments
	// (fake.Provider.InterleaveCalls), as only OpenAI-compatible servers do.
	interleave bool
}

const weatherText = "It is 18 degrees and sunny in Paris."

func textAnswer(s string) chat.Answer {
	return chat.Answer{Content: []chat.Part{chat.Text(s)}, Stop: chat.StopEndTurn, Usage: chat.Usage{Input: 21, Output: 9}}
}

func toolPart(id, name, args string) chat.Part {
	return chat.Part{Type: chat.PartToolCall, ToolCall: &chat.ToolCall{ID: id, Name: name, Args: json.RawMessage(args)}}
}

func toolAnswer(calls ...chat.Part) chat.Answer {
	return chat.Answer{Content: calls, Stop: chat.StopToolUse, Usage: chat.Usage{Input: 40, Output: 12}}
}

// The cases, in the table's order.
var confCases = []confCase{
	{name: "text", answer: textAnswer(weatherText)},
	{name: "text streamed", stream: true, answer: textAnswer(weatherText)},
	{name: "one tool call", answer: toolAnswer(toolPart("call_w1", "get_weather", `{"city":"Paris"}`))},
	{name: "parallel tool calls", answer: toolAnswer(
		toolPart("call_w1", "get_weather", `{"city":"Paris"}`),
		toolPart("call_t2", "get_time", `{"city":"Paris","format":"24h"}`))},
	{name: "tool call streamed, arguments in pieces", stream: true,
		answer: toolAnswer(toolPart("call_w1", "get_weather", `{"city":"Paris","units":"celsius","days":3}`))},
	{name: "multi-turn with tool results", answer: textAnswer(weatherText), sent: func(r *chat.Request) error {
		var res *chat.ToolResult
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				if p.Type == chat.PartToolResult {
					res = p.ToolResult
				}
			}
		}
		// Gemini's functionResponse.response is an object: a text result
		// is sent as {"result": text}.
		if res == nil || len(res.Content) != 1 || !strings.Contains(res.Content[0].Text, "18C, sunny") {
			return fmt.Errorf("the fallback got no tool result 18C, sunny: %+v", r.Messages)
		}
		return nil
	}},
	{name: "forced tool_choice", answer: toolAnswer(toolPart("call_w1", "get_weather", `{"city":"Paris"}`)),
		sent: func(r *chat.Request) error {
			if r.ToolChoice != (chat.ToolChoice{Mode: chat.ToolNamed, Name: "get_weather"}) {
				return fmt.Errorf("the fallback was asked tool choice %+v, want get_weather", r.ToolChoice)
			}
			return nil
		}},
	{name: "JSON schema", answer: textAnswer(`{"temp":18}`), sent: func(r *chat.Request) error {
		if r.Format == nil || r.Format.Type != chat.FormatJSONSchema || !jsonEqual(r.Format.Schema, json.RawMessage(weatherSchema)) {
			return fmt.Errorf("the fallback was asked format %+v, want the JSON schema %s", r.Format, weatherSchema)
		}
		return nil
	}},
	{name: "stop by max tokens", answer: chat.Answer{Content: []chat.Part{chat.Text("It is")}, Stop: chat.StopMaxTokens,
		Usage: chat.Usage{Input: 21, Output: 5}}, sent: func(r *chat.Request) error {
		if r.MaxTokens != 5 {
			return fmt.Errorf("the fallback was asked max tokens %d, want 5", r.MaxTokens)
		}
		return nil
	}},
	{name: "usage with cache tokens", answer: chat.Answer{Content: []chat.Part{chat.Text(weatherText)}, Stop: chat.StopEndTurn,
		Usage: chat.Usage{Input: 100, Output: 20, CacheRead: 300, CacheWrite: 50}}},
	{name: "error event mid-stream", stream: true, answer: textAnswer(weatherText), script: "stream:error-after=3"},
	{name: "request the target cannot serve", answer: textAnswer(weatherText), unservable: true},
	// Beyond the cases, where translations are known to break.
	{name: "system prompt, several turns", answer: textAnswer(weatherText), sent: func(r *chat.Request) error {
		if len(r.System) != 1 || r.System[0].Text != "Answer in one sentence." || len(r.Messages) != 3 {
			return fmt.Errorf("the fallback was asked system %+v and %d messages, want the system prompt and 3", r.System, len(r.Messages))
		}
		return nil
	}},
	{name: "text then a tool call, streamed", stream: true, answer: chat.Answer{
		Content: []chat.Part{chat.Text("Let me check."), toolPart("call_w1", "get_weather", `{"city":"Paris"}`)},
		Stop:    chat.StopToolUse, Usage: chat.Usage{Input: 40, Output: 15}}},
	{name: "tool call without arguments, streamed", stream: true, answer: toolAnswer(toolPart("call_n1", "get_time", `{}`))},
	{name: "text and parallel tool results, then a user turn", answer: textAnswer(weatherText), sent: func(r *chat.Request) error {
		var calls, results []string
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				switch p.Type {
				case chat.PartToolCall:
					calls = append(calls, p.ToolCall.ID)
				case chat.PartToolResult:
					results = append(results, p.ToolResult.CallID)
				}
			}
		}
		last := r.Messages[len(r.Messages)-1]
		if len(calls) != 2 || !slices.Equal(calls, results) || last.Role != chat.RoleUser ||
			last.Parts[len(last.Parts)-1].Text != "Thanks. And tomorrow?" {
			return fmt.Errorf("the fallback was asked calls %v, results %v, last turn %+v", calls, results, last)
		}
		return nil
	}},
	{name: "an image", answer: textAnswer("A red dot."), sent: func(r *chat.Request) error {
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				if p.Type == chat.PartImage && p.Image.MediaType == "image/png" && p.Image.Data == pngDot {
					return nil
				}
			}
		}
		return fmt.Errorf("the fallback got no PNG image: %+v", r.Messages)
	}},
	{name: "stop sequence", answer: chat.Answer{Content: []chat.Part{chat.Text("It is 18")}, Stop: chat.StopSequence,
		StopSequence: " degrees", Usage: chat.Usage{Input: 21, Output: 4}}, sent: func(r *chat.Request) error {
		if !slices.Equal(r.Stop, []string{" degrees"}) {
			return fmt.Errorf("the fallback was asked stop sequences %q", r.Stop)
		}
		return nil
	}},
	{name: "parallel tool calls streamed, arguments interleaved", stream: true, interleave: true, answer: toolAnswer(
		toolPart("call_w1", "get_weather", `{"city":"Paris","units":"celsius"}`),
		toolPart("call_t2", "get_time", `{"city":"Paris","format":"24h"}`))},
	{name: "the fallback's own error (429)", answer: textAnswer(weatherText), script: "429"},
	{name: "error event right after the stream's start", stream: true, answer: textAnswer(weatherText), script: "stream:error-after=1"},
	{name: "stream cut mid-way", stream: true, answer: textAnswer(weatherText), script: "stream:cut-after=3"},
}

// pngDot is a 1×1 PNG, base64-encoded.
const pngDot = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="

const weatherSchema = `{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"]}`

// confResult is what one cell of the table says.
type confResult struct {
	ok   bool
	note string // why it cannot exist, or what it shows beyond a plain pass
}

// confTable is the results by case, then column (ingress->egress).
type confTable map[string]map[string]confResult

func TestConformance(t *testing.T) {
	table := confTable{}
	for _, c := range confCases {
		table[c.name] = map[string]confResult{}
		for _, in := range confIngress {
			for _, out := range confEgress {
				col := in + "->" + out
				t.Run(c.name+"/"+col, func(t *testing.T) {
					res := confResult{ok: false}
					defer func() { table[c.name][col] = res }()
					if note, skip := confCannot(c, in, out); skip {
						res = confResult{ok: true, note: note}
						return
					}
					res.note = runConfCell(t, c, in, out)
					res.ok = !t.Failed()
				})
			}
		}
	}
	extra := confExtras(t)
	n := 0
	for _, r := range table {
		n += len(r)
	}
	if n != len(confCases)*len(confIngress)*len(confEgress) {
		return // a -run that picked some cells: no table to check
	}
	got := renderConformance(table, extra)
	if os.Getenv(confUpdateEnv) != "" {
		if err := os.WriteFile(confFile, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(confFile)
	if err != nil {
		t.Fatalf("%v; write it with %s=1", err, confUpdateEnv)
	}
	if string(want) != got {
		t.Errorf("CONFORMANCE.md disagrees with what ran; rewrite it with %s=1 and review the change. What ran:\n%s", confUpdateEnv, got)
	}
}

// confCannot says why a cell cannot exist, if it cannot.
func confCannot(c confCase, in, out string) (string, bool) {
	if c.unservable && in == out {
		return "n/a: the same dialect is not translated; the request goes as it came", true
	}
	if c.interleave && out != "openai" {
		return "n/a: only OpenAI-compatible servers interleave parallel calls' arguments", true
	}
	return "", false
}

// confEnv is a gateway whose providers openai and anthropic are down
// (503), each route falling back to the provider "to" of the egress kind,
// on a strict fake of its own.
func confEnv(t *testing.T, out string, c confCase) (*env, *fake.Server) {
	to := fake.NewServer(c.script)
	to.Provider.Strict = true
	to.Provider.InterleaveCalls = c.interleave
	a := c.answer
	to.Provider.Chat = &a
	t.Cleanup(to.Close)
	var withB func(*config.Config)
	if out == "bedrock" {
		withB = withBedrock(t)
	}
	kind, _, _ := strings.Cut(out, "/") // vertex/anthropic: kind vertex, the publisher's model
	var account string
	if kind == "vertex" {
		t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1") // never the metadata server
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
		var err error
		if account, err = to.WriteServiceAccount(t.TempDir()); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnvWith(t, "503", func(cfg *config.Config) {
		p := config.Provider{Kind: kind, BaseURL: to.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 64}
		switch kind {
		case "bedrock":
			keys := cfg.Auth.Keys
			withB(cfg)
			cfg.Auth.Keys = keys // the SDKs' keys pass through, as on every other route
			p = config.Provider{Kind: kind, BaseURL: to.URL, Region: fake.DefaultAWS.Region, MaxConcurrent: 64}
		case "vertex":
			p = config.Provider{Kind: kind, BaseURL: to.URL, Project: "p1", Region: "us-east5", CredentialsFile: account, MaxConcurrent: 64}
		}
		cfg.Providers["to"] = p
		pol := fastPolicy("interactive")
		pol.Retry.MaxAttempts = 1
		cfg.Policies["interactive"] = pol
		for i := range cfg.Routes[:2] {
			cfg.Routes[i].Fallbacks = []config.Target{{Provider: "to", Model: confModels[out]}}
		}
	}, Options{})
	return e, to
}

// confOutcome is what a client's SDK made of the answer, in the chat
// model's terms.
type confOutcome struct {
	id        string // the answer's id
	text      string
	calls     []chat.ToolCall
	stop      string // as the client's API names it
	usage     chat.Usage
	argDeltas int    // the pieces the first tool call's arguments came in, streamed
	err       error  // the SDK's error
	status    int    // the status of an error the SDK raised as an API error
	errText   string // what that error says: its type, code and message
}

// runConfCell runs one cell and returns its note ("" for a plain pass).
func runConfCell(t *testing.T, c confCase, in, out string) string {
	e, to := confEnv(t, out, c)
	return judgeConfCell(t, c, in, out, e, to)
}

// judgeConfCell makes the cell's call on e, whose fallback is to, and
// checks what the client got; it returns the cell's note.
func judgeConfCell(t *testing.T, c confCase, in, out string, e *env, to *fake.Server) string {
	var o confOutcome
	if in == "openai" {
		o = openaiConf(e, c)
	} else {
		o = anthropicConf(e, c)
	}
	if n := e.up.Calls(); n != 1 {
		t.Errorf("the primary got %d calls, want 1", n)
	}
	if c.unservable {
		if n := to.Provider.Calls(); n != 0 {
			t.Errorf("the fallback that cannot serve the request got %d calls", n)
		}
		if o.status != 503 {
			t.Errorf("the client got %v (status %d), want the primary's own 503", o.err, o.status)
		}
		return ""
	}
	if n := to.Provider.Calls(); n != 1 {
		t.Fatalf("the fallback got %d calls, want 1; the client got %v", n, o.err)
	}
	sent := to.Provider.Requests()[0]
	if sent.Step == "" { // refused by the strict fake
		t.Fatalf("the fallback refused the request: %v\n%s", o.err, sent.Body)
	}
	if c.script == "429" { // the fallback's error, in the client's shape
		if o.status != 429 || !regexp.MustCompile("(?i)rate.?limit").MatchString(o.errText) {
			t.Errorf("the client got %v (status %d, %q), want the fallback's 429 as its API's rate limit error", o.err, o.status, o.errText)
		}
		return ""
	}
	if c.script != "" { // the stream fails: the client must see it fail, as the upstream's error or the gateway's cut
		want := "overloaded|stream encountered an error"
		if strings.Contains(c.script, "cut") {
			want = "stream_cut"
		}
		if o.err != nil && !regexp.MustCompile("(?i)"+want).MatchString(o.err.Error()) {
			t.Errorf("the client got %v, want an error matching %s", o.err, want)
		}
		if o.err == nil {
			t.Fatalf("the stream ended cleanly with %q; want the upstream error raised", o.text)
		}
		if !strings.HasPrefix(weatherText, o.text) {
			t.Errorf("text before the error %q, want a part of the answer", o.text)
		}
		return ""
	}
	if o.err != nil {
		t.Fatalf("the client got %v; the fallback was sent:\n%s", o.err, sent.Body)
	}
	if c.sent != nil {
		r, err := confCodec(out).DecodeRequest(sent.Body)
		if err != nil {
			t.Fatalf("the fallback's request does not decode: %v\n%s", err, sent.Body)
		}
		if err := c.sent(r); err != nil {
			t.Error(err)
		}
	}
	return checkConfAnswer(t, c, in, out, o)
}

// checkConfAnswer compares what the client made of the answer with what
// the fallback answered; it returns the cell's note.
func checkConfAnswer(t *testing.T, c confCase, in, out string, o confOutcome) string {
	note := ""
	a := c.answer
	var wantText string
	var wantCalls []chat.ToolCall
	for _, p := range a.Content {
		switch p.Type {
		case chat.PartText:
			wantText += p.Text
		case chat.PartToolCall:
			wantCalls = append(wantCalls, *p.ToolCall)
		}
	}
	if o.text != wantText {
		t.Errorf("text %q, want %q", o.text, wantText)
	}
	if prefix := map[string]string{"openai": "chatcmpl-", "anthropic": "msg_"}[in]; !strings.HasPrefix(o.id, prefix) ||
		len(o.id) == len(prefix) {
		t.Errorf("answer id %q, want one of the client's API's form (%s…)", o.id, prefix)
	}
	if len(o.calls) != len(wantCalls) {
		t.Fatalf("tool calls %+v, want %d", o.calls, len(wantCalls))
	}
	ids := map[string]bool{}
	for i, w := range wantCalls {
		g := o.calls[i]
		if g.Name != w.Name || !jsonEqual(g.Args, w.Args) {
			t.Errorf("tool call %d: %s %s, want %s %s", i, g.Name, g.Args, w.Name, w.Args)
		}
		switch {
		case geminiAnswers(out):
			if g.ID == "" || ids[g.ID] {
				t.Errorf("tool call %d: id %q, want one of its own", i, g.ID)
			}
			ids[g.ID] = true
			note = "Gemini gives no tool call ids: the gateway makes them up"
		case g.ID != w.ID:
			t.Errorf("tool call %d: id %q, want %q", i, g.ID, w.ID)
		}
	}
	if c.stream && len(wantCalls) > 0 {
		switch {
		case geminiAnswers(out):
			if o.argDeltas < 1 {
				t.Errorf("arguments in %d pieces, want them", o.argDeltas)
			}
			note = "Gemini streams a call's arguments whole: the client gets them in one piece, the gateway makes up its id"
		case wantCalls[0].Args == nil || string(wantCalls[0].Args) == "{}":
		case o.argDeltas < 2:
			t.Errorf("arguments in %d pieces, want them as they were streamed (3)", o.argDeltas)
		}
	}
	wantStop := a.Stop
	if a.Stop == chat.StopSequence && (out == "openai" || out == "gemini") {
		wantStop = chat.StopEndTurn
		if in == "anthropic" {
			note = out + " does not tell a stop sequence from the end of the turn: the client reads end_turn"
		}
	}
	if want := stopName(in, wantStop); o.stop != want {
		t.Errorf("stop %q, want %q", o.stop, want)
	}
	want := a.Usage
	carriesWrite := func(k string) bool { return k == "anthropic" || k == "bedrock" }
	if !carriesWrite(out) || !carriesWrite(in) {
		want.Input += want.CacheWrite // told as part of the prompt
		want.CacheWrite = 0
		if a.Usage.CacheWrite != 0 {
			if !carriesWrite(out) {
				note = out + " has no count of cache writes: they are told as uncached prompt tokens"
			} else {
				note = in + " has no count of cache writes: they are told as uncached prompt tokens"
			}
		}
	}
	if o.usage != want {
		t.Errorf("usage %+v, want %+v", o.usage, want)
	}
	return note
}

// geminiAnswers reports whether a fallback of kind out answers in
// Gemini's shape: Gemini's API, and Vertex AI's for Google's models.
func geminiAnswers(out string) bool { return out == "gemini" || out == "vertex/google" }

// stopName is the stop reason as the client's API names it.
func stopName(in string, s chat.StopReason) string {
	if in == "anthropic" {
		return string(s)
	}
	return map[chat.StopReason]string{chat.StopEndTurn: "stop", chat.StopSequence: "stop", chat.StopToolUse: "tool_calls",
		chat.StopMaxTokens: "length", chat.StopContentFilter: "content_filter"}[s]
}

// confCodec is the chat codec of a provider kind.
func confCodec(kind string) chat.Codec {
	return map[string]chat.Codec{"openai": chat.OpenAI, "anthropic": chat.Anthropic,
		"gemini": chat.Gemini, "bedrock": chat.Bedrock}[kind]
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

const weatherQuestion = "What is the weather in Paris?"

func weatherParams() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}},
		"required": []string{"city"}}
}

// openaiConf makes the case's call with the OpenAI SDK.
func openaiConf(e *env, c confCase) confOutcome {
	p := openai.ChatCompletionNewParams{
		Model:    openai.ChatModelGPT4oMini,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(weatherQuestion)},
	}
	tool := func(name string) openai.ChatCompletionToolUnionParam {
		return openai.ChatCompletionFunctionTool(oshared.FunctionDefinitionParam{Name: name,
			Description: openai.String("Tells " + name), Parameters: weatherParams()})
	}
	switch c.name {
	case "one tool call", "tool call streamed, arguments in pieces", "parallel tool calls",
		"text then a tool call, streamed", "tool call without arguments, streamed", "parallel tool calls streamed, arguments interleaved":
		p.Tools = []openai.ChatCompletionToolUnionParam{tool("get_weather"), tool("get_time")}
	case "system prompt, several turns":
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Answer in one sentence."),
			openai.UserMessage("Hello."), openai.AssistantMessage("Hello! How can I help?"), openai.UserMessage(weatherQuestion)}
	case "forced tool_choice":
		p.Tools = []openai.ChatCompletionToolUnionParam{tool("get_weather"), tool("get_time")}
		p.ToolChoice = openai.ToolChoiceOptionFunctionToolChoice(openai.ChatCompletionNamedToolChoiceFunctionParam{Name: "get_weather"})
	case "multi-turn with tool results":
		p.Tools = []openai.ChatCompletionToolUnionParam{tool("get_weather")}
		p.Messages = append(p.Messages,
			openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
				ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: "call_w1", Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: "get_weather", Arguments: `{"city":"Paris"}`},
				}}},
			}},
			openai.ToolMessage("18C, sunny", "call_w1"))
	case "text and parallel tool results, then a user turn":
		p.Tools = []openai.ChatCompletionToolUnionParam{tool("get_weather"), tool("get_time")}
		call := func(id, name string) openai.ChatCompletionMessageToolCallUnionParam {
			return openai.ChatCompletionMessageToolCallUnionParam{OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
				ID: id, Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: name, Arguments: `{"city":"Paris"}`}}}
		}
		p.Messages = append(p.Messages,
			openai.ChatCompletionMessageParamUnion{OfAssistant: &openai.ChatCompletionAssistantMessageParam{
				Content:   openai.ChatCompletionAssistantMessageParamContentUnion{OfString: openai.String("Let me check.")},
				ToolCalls: []openai.ChatCompletionMessageToolCallUnionParam{call("call_w1", "get_weather"), call("call_t2", "get_time")},
			}},
			openai.ToolMessage("18C, sunny", "call_w1"),
			openai.ToolMessage("14:00", "call_t2"),
			openai.UserMessage("Thanks. And tomorrow?"))
	case "JSON schema":
		var schema map[string]any
		json.Unmarshal([]byte(weatherSchema), &schema)
		p.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &oshared.ResponseFormatJSONSchemaParam{
			JSONSchema: oshared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "weather", Schema: schema}}}
	case "stop by max tokens":
		p.MaxTokens = openai.Int(5)
	case "an image":
		p.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{
			openai.TextContentPart("What is in this image?"),
			openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{URL: "data:image/png;base64," + pngDot})})}
	case "stop sequence":
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{" degrees"}}
	case "request the target cannot serve":
		p.WebSearchOptions = openai.ChatCompletionNewParamsWebSearchOptions{SearchContextSize: "low"}
	}
	cl := e.openaiClient()
	var o confOutcome
	setErr := func(err error) {
		o.err = err
		var ae *openai.Error
		if errors.As(err, &ae) {
			o.status = ae.StatusCode
			o.errText = ae.Type + " " + ae.Code + " " + ae.Message
		}
	}
	if !c.stream {
		got, err := cl.Chat.Completions.New(sdkContext(e.t), p)
		if err != nil {
			setErr(err)
			return o
		}
		if len(got.Choices) != 1 {
			o.err = fmt.Errorf("%d choices", len(got.Choices))
			return o
		}
		ch := got.Choices[0]
		o.id, o.text, o.stop = got.ID, ch.Message.Content, ch.FinishReason
		for _, tc := range ch.Message.ToolCalls {
			o.calls = append(o.calls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
		}
		o.usage = openaiUsage(got.Usage)
		return o
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	s := cl.Chat.Completions.NewStreaming(sdkContext(e.t), p)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		ch := s.Current()
		acc.AddChunk(ch)
		for _, c := range ch.Choices {
			for _, tc := range c.Delta.ToolCalls {
				if tc.Index == 0 && tc.Function.Arguments != "" {
					o.argDeltas++
				}
			}
			o.text += c.Delta.Content
		}
	}
	if err := s.Err(); err != nil {
		setErr(err)
		return o
	}
	if len(acc.Choices) != 1 {
		o.err = fmt.Errorf("%d choices", len(acc.Choices))
		return o
	}
	ch := acc.Choices[0]
	o.id, o.stop = acc.ID, ch.FinishReason
	for _, tc := range ch.Message.ToolCalls {
		o.calls = append(o.calls, chat.ToolCall{ID: tc.ID, Name: tc.Function.Name, Args: json.RawMessage(tc.Function.Arguments)})
	}
	o.usage = openaiUsage(acc.Usage)
	return o
}

func openaiUsage(u openai.CompletionUsage) chat.Usage {
	cached := u.PromptTokensDetails.CachedTokens
	return chat.Usage{Input: u.PromptTokens - cached, Output: u.CompletionTokens, CacheRead: cached}
}

// anthropicConf makes the case's call with the Anthropic SDK.
func anthropicConf(e *env, c confCase) confOutcome {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model("claude-haiku-4-5"),
		MaxTokens: 256,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(weatherQuestion))},
	}
	tool := func(name string) anthropic.ToolUnionParam {
		return anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: name, Description: anthropic.String("Tells " + name),
			InputSchema: anthropic.ToolInputSchemaParam{Properties: weatherParams()["properties"], Required: []string{"city"}}}}
	}
	switch c.name {
	case "one tool call", "tool call streamed, arguments in pieces", "parallel tool calls",
		"text then a tool call, streamed", "tool call without arguments, streamed", "parallel tool calls streamed, arguments interleaved":
		p.Tools = []anthropic.ToolUnionParam{tool("get_weather"), tool("get_time")}
	case "system prompt, several turns":
		p.System = []anthropic.TextBlockParam{{Text: "Answer in one sentence."}}
		p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello.")),
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Hello! How can I help?")),
			anthropic.NewUserMessage(anthropic.NewTextBlock(weatherQuestion))}
	case "forced tool_choice":
		p.Tools = []anthropic.ToolUnionParam{tool("get_weather"), tool("get_time")}
		p.ToolChoice = anthropic.ToolChoiceParamOfTool("get_weather")
	case "multi-turn with tool results":
		p.Tools = []anthropic.ToolUnionParam{tool("get_weather")}
		p.Messages = append(p.Messages,
			anthropic.NewAssistantMessage(anthropic.NewToolUseBlock("call_w1", map[string]any{"city": "Paris"}, "get_weather")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("call_w1", "18C, sunny", false)))
	case "text and parallel tool results, then a user turn":
		p.Tools = []anthropic.ToolUnionParam{tool("get_weather"), tool("get_time")}
		p.Messages = append(p.Messages,
			anthropic.NewAssistantMessage(anthropic.NewTextBlock("Let me check."),
				anthropic.NewToolUseBlock("call_w1", map[string]any{"city": "Paris"}, "get_weather"),
				anthropic.NewToolUseBlock("call_t2", map[string]any{"city": "Paris"}, "get_time")),
			anthropic.NewUserMessage(anthropic.NewToolResultBlock("call_w1", "18C, sunny", false),
				anthropic.NewToolResultBlock("call_t2", "14:00", false), anthropic.NewTextBlock("Thanks. And tomorrow?")))
	case "JSON schema":
		var schema map[string]any
		json.Unmarshal([]byte(weatherSchema), &schema)
		p.OutputConfig = anthropic.OutputConfigParam{Format: anthropic.JSONOutputFormatParam{Schema: schema}}
	case "stop by max tokens":
		p.MaxTokens = 5
	case "an image":
		p.Messages = []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is in this image?"),
			anthropic.NewImageBlockBase64("image/png", pngDot))}
	case "stop sequence":
		p.StopSequences = []string{" degrees"}
	case "request the target cannot serve":
		p.Tools = []anthropic.ToolUnionParam{{OfWebSearchTool20250305: &anthropic.WebSearchTool20250305Param{}}}
	}
	cl := e.anthropicClient()
	var o confOutcome
	setErr := func(err error) {
		o.err = err
		var ae *anthropic.Error
		if errors.As(err, &ae) {
			o.status = ae.StatusCode
			o.errText = ae.Error()
		}
	}
	var m anthropic.Message
	if !c.stream {
		got, err := cl.Messages.New(sdkContext(e.t), p)
		if err != nil {
			setErr(err)
			return o
		}
		m = *got
	} else {
		s := cl.Messages.NewStreaming(sdkContext(e.t), p)
		defer s.Close()
		first := -1
		for s.Next() {
			ev := s.Current()
			if err := m.Accumulate(ev); err != nil {
				o.err = err
				return o
			}
			switch ev.Type {
			case "content_block_start":
				if ev.ContentBlock.Type == "tool_use" && first < 0 {
					first = int(ev.Index)
				}
			case "content_block_delta":
				if ev.Delta.Type == "input_json_delta" && int(ev.Index) == first && ev.Delta.PartialJSON != "" {
					o.argDeltas++
				}
				o.text += ev.Delta.Text
			}
		}
		if err := s.Err(); err != nil {
			setErr(err)
			return o
		}
		o.text = ""
	}
	for _, b := range m.Content {
		switch b.Type {
		case "text":
			o.text += b.Text
		case "tool_use":
			o.calls = append(o.calls, chat.ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
		}
	}
	o.id, o.stop = m.ID, string(m.StopReason)
	o.usage = chat.Usage{Input: m.Usage.InputTokens, Output: m.Usage.OutputTokens,
		CacheRead: m.Usage.CacheReadInputTokens, CacheWrite: m.Usage.CacheCreationInputTokens}
	return o
}

// confExtraCases are the cases the Azure and Vertex AI columns run.
var confExtraCases = []string{"text", "text streamed", "one tool call", "tool call streamed, arguments in pieces",
	"the fallback's own error (429)"}

// confExtra is a column of Azure OpenAI or Vertex AI as the fallback,
// with its results by case.
type confExtra struct {
	col string
	res map[string]confResult
}

// confExtras runs Azure OpenAI and Vertex AI (each publisher, as the
// fallback's model picks it) as fallbacks of another dialect, for the
// cases of confExtraCases, and checks beyond the answer where the request
// went and what it carried: Azure's v1 API and its api-key header; the
// publisher's path under the project's location, the gateway's own
// bearer token, and for a Claude model Anthropic's body without "model"
// and with "anthropic_version" (which the strict fake requires too).
func confExtras(t *testing.T) []confExtra {
	var out []confExtra
	for _, x := range []struct {
		in, out string
		path    func(stream bool) string // where the fallback is asked
	}{
		{"openai", "azure", func(bool) string { return "/openai/v1/chat/completions" }},
		{"anthropic", "azure", func(bool) string { return "/openai/v1/chat/completions" }},
		{"openai", "vertex/anthropic", vertexPathOf("anthropic", "rawPredict", "streamRawPredict")},
		{"anthropic", "vertex/anthropic", vertexPathOf("anthropic", "rawPredict", "streamRawPredict")},
		{"openai", "vertex/google", vertexPathOf("google", "generateContent", "streamGenerateContent")},
		{"anthropic", "vertex/google", vertexPathOf("google", "generateContent", "streamGenerateContent")},
	} {
		col := confExtra{col: x.in + "->" + x.out, res: map[string]confResult{}}
		for _, name := range confExtraCases {
			c := confCases[slices.IndexFunc(confCases, func(c confCase) bool { return c.name == name })]
			t.Run(name+"/"+col.col, func(t *testing.T) {
				res := confResult{}
				defer func() { col.res[name] = res }()
				e, to := confEnv(t, x.out, c)
				res.note = judgeConfCell(t, c, x.in, x.out, e, to)
				sent := to.Provider.Requests()[0]
				if want := x.path(c.stream); sent.Path != want {
					t.Errorf("the fallback was asked at %s, want %s", sent.Path, want)
				}
				if e.up.Calls() != 1 || to.Provider.Calls() != 1 {
					t.Errorf("calls: primary %d, fallback %d; want 1 and 1", e.up.Calls(), to.Provider.Calls())
				}
				if err := checkCloudRequest(x.out, sent); err != nil {
					t.Errorf("%v; the fallback got %s", err, sent.Body)
				}
				res.ok = !t.Failed()
			})
		}
		out = append(out, col)
	}
	return out
}

// vertexPathOf returns the path of a Vertex AI publisher's model, for
// the method of a whole answer or of a stream.
func vertexPathOf(publisher, whole, streamed string) func(bool) string {
	return func(stream bool) string {
		m := whole
		if stream {
			m = streamed
		}
		return confVertexLocation + "/publishers/" + publisher + "/models/" + confModels["vertex/"+publisher] + ":" + m
	}
}

// checkCloudRequest checks what the fallback of kind out (azure,
// vertex/anthropic, vertex/google) got, beyond its path: its credentials
// and its body's model.
func checkCloudRequest(out string, sent fake.Request) error {
	var b map[string]json.RawMessage
	if err := json.Unmarshal(sent.Body, &b); err != nil {
		return err
	}
	auth, key := sent.Header.Get("Authorization"), sent.Header.Get("Api-Key")
	_, model := b["model"]
	switch out {
	case "azure":
		if key != "sk-injected-1234" || auth != "" {
			return fmt.Errorf("api-key %q and Authorization %q, want the provider's key in api-key alone", key, auth)
		}
		if string(b["model"]) != `"`+confModels[out]+`"` {
			return fmt.Errorf("model %s, want the deployment %s", b["model"], confModels[out])
		}
	case "vertex/anthropic", "vertex/google":
		if !strings.HasPrefix(auth, "Bearer ") || strings.Contains(auth, clientKey) || key != "" {
			return fmt.Errorf("Authorization %q and api-key %q, want the gateway's own bearer token", auth, key)
		}
		if model {
			return fmt.Errorf("a model in the body; Vertex AI's is in the path")
		}
		if v := string(b["anthropic_version"]); out == "vertex/anthropic" && v != `"vertex-2023-10-16"` {
			return fmt.Errorf("anthropic_version %s, want vertex-2023-10-16", v)
		}
	}
	return nil
}

// renderConformance writes the table as CONFORMANCE.md.
func renderConformance(table confTable, extra []confExtra) string {
	var b bytes.Buffer
	b.WriteString(`# Conformance: a client of one dialect answered by a provider of another

Written by TestConformance (internal/gateway/conformance_test.go), which fails when this file
disagrees with what ran. After a change, regenerate it and review the diff:

    SLUICE_UPDATE_CONFORMANCE=1 go test -race -run Conformance ./internal/gateway/

Each cell is one call through the gateway: the client is the official Go SDK (openai-go,
anthropic-sdk-go); the route's primary provider is down (503, one attempt); its one fallback is
a provider of the column's kind on a fake that checks the request against that API's rules as
the provider does (fake.Provider.Strict: a request it would refuse gets its 400) and answers the
case's scripted answer in that API's shape (fake.Provider.Chat). A cell passes when the SDK's
parsed answer has the answer's text, tool call names, ids and arguments, stop reason and usage
numbers, an answer id of the client's API's form (chatcmpl-…, msg_…), the primary got one call and the fallback one (none for a request it cannot serve,
whose client gets the primary's own 503). Same-dialect columns are the untranslated baseline.
The rows after "request the target cannot serve" go beyond the issue's list, where translations
are known to break. The text and tool-call rows (the first five) run again with the official Node
SDKs (openai, @anthropic-ai/sdk, pinned in internal/gateway/testdata/conformance-node) in
TestConformanceNode, which skips where node or the pinned SDKs are missing and so is not part of
this file.

`)
	var cols []string
	for _, in := range confIngress {
		for _, out := range confEgress {
			cols = append(cols, in+"->"+out)
		}
	}
	var notes []string
	mark := func(r confResult) string {
		s := "pass"
		if !r.ok {
			s = "**FAIL**"
		}
		if strings.HasPrefix(r.note, "n/a") {
			s = "n/a"
		}
		if r.note == "" {
			return s
		}
		i := slices.Index(notes, r.note)
		if i < 0 {
			notes = append(notes, r.note)
			i = len(notes) - 1
		}
		return fmt.Sprintf("%s [%d]", s, i+1)
	}
	b.WriteString("| case | " + strings.Join(cols, " | ") + " |\n|---|" + strings.Repeat("---|", len(cols)) + "\n")
	pass, na, fail := 0, 0, 0
	for _, c := range confCases {
		b.WriteString("| " + c.name + " |")
		for _, col := range cols {
			r := table[c.name][col]
			switch {
			case !r.ok:
				fail++
			case strings.HasPrefix(r.note, "n/a"):
				na++
			default:
				pass++
			}
			b.WriteString(" " + mark(r) + " |")
		}
		b.WriteString("\n")
	}
	b.WriteString("\nAzure OpenAI and Vertex AI as fallbacks of another dialect: Azure at its v1 API\n" +
		"(/openai/v1/chat/completions, the deployment as the model, the key in api-key); Vertex AI under\n" +
		"the provider's project and region, the publisher picked by the fallback's model (vertex/anthropic:\n" +
		confModels["vertex/anthropic"] + " at :rawPredict and :streamRawPredict, Anthropic's body without\n" +
		"\"model\" and with \"anthropic_version\"; vertex/google: " + confModels["vertex/google"] + " at :generateContent and\n" +
		":streamGenerateContent), signed with the gateway's own token. Each cell also checks that path,\n" +
		"those credentials and that body on the fake.\n\n")
	b.WriteString("| column | " + strings.Join(confExtraCases, " | ") + " |\n|---|" + strings.Repeat("---|", len(confExtraCases)) + "\n")
	for _, x := range extra {
		b.WriteString("| " + x.col + " |")
		for _, name := range confExtraCases {
			r := x.res[name]
			switch {
			case !r.ok:
				fail++
			case strings.HasPrefix(r.note, "n/a"):
				na++
			default:
				pass++
			}
			b.WriteString(" " + mark(r) + " |")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nCells: %d pass, %d cannot exist, %d fail.\n", pass, na, fail)
	if len(notes) > 0 {
		b.WriteString("\nNotes:\n\n")
		for i, n := range notes {
			fmt.Fprintf(&b, "%d. %s\n", i+1, n)
		}
	}
	return b.String()
}
