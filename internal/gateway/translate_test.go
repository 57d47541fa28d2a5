package gateway

import (
	"cmp"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/sse"
)

// xlEnv is a gateway whose providers openai and anthropic are down (503),
// each route falling back to a provider of the other kind, on a fake of
// its own: /openai to claude (Anthropic), /anthropic to gpt (OpenAI).
type xlEnv struct {
	*env
	claude, gpt *fake.Server
}

// newXLEnv builds it.
func newXLEnv(t *testing.T) *xlEnv { return newXLEnvAt(t, "", nil) }

// newXLEnvAt is newXLEnv with the provider gpt at gptURL instead, when
// not "", and its config edited by edit, when not nil.
func newXLEnvAt(t *testing.T, gptURL string, edit func(*config.Config)) *xlEnv {
	t.Helper()
	claude, gpt := fake.NewServer("200"), fake.NewServer("200")
	t.Cleanup(claude.Close)
	t.Cleanup(gpt.Close)
	e := newEnvWith(t, "503", func(cfg *config.Config) {
		cfg.Providers["claude"] = config.Provider{Kind: "anthropic", BaseURL: claude.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 64}
		cfg.Providers["gpt"] = config.Provider{Kind: "openai", BaseURL: cmp.Or(gptURL, gpt.URL), APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 64}
		p := fastPolicy("interactive")
		p.Retry.MaxAttempts = 1
		cfg.Policies["interactive"] = p
		cfg.Routes[0].Fallbacks = []config.Target{{Provider: "claude", Model: "claude-haiku-4-5"}}
		cfg.Routes[1].Fallbacks = []config.Target{{Provider: "gpt", Model: "gpt-4o-mini"}}
		if edit != nil {
			edit(cfg)
		}
	}, Options{})
	return &xlEnv{env: e, claude: claude, gpt: gpt}
}

// readStream reads a client's SSE stream with the client's codec.
func readStream(t *testing.T, c chat.Codec, stream string) (*chat.Answer, *chat.Error, bool) {
	t.Helper()
	var p sse.Parser
	dec := c.NewStreamDecoder()
	var col chat.Collector
	var evs []chat.Event
	p.Feed([]byte(stream), func(ev sse.Event) bool {
		var err error
		if evs, err = dec.Decode(evs[:0], chat.Frame{Event: ev.Type, Data: ev.Data}); err != nil {
			t.Fatalf("the client's codec cannot read %q: %v", ev.Data, err)
		}
		for _, e := range evs {
			if err := col.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		return true
	})
	for _, e := range dec.End(evs[:0]) {
		col.Add(e)
	}
	a, e := col.Answer()
	return a, e, col.Done()
}

// Through the gateway, an OpenAI client whose provider is down is answered
// by Anthropic, and an Anthropic client by OpenAI, in the client's shape,
// whole and streamed, with the fallback's key and its own endpoint.
func TestGatewayTranslatedFallback(t *testing.T) {
	e := newXLEnv(t)
	for _, tt := range []struct {
		name, path, body string
		codec            chat.Codec
		to               *fake.Server
		toPath, label    string
		model            string
	}{
		{"openai->anthropic", "/openai/v1/chat/completions",
			`{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
			chat.OpenAI, e.claude, "/v1/messages", "openai->anthropic", "claude-haiku-4-5"},
		{"anthropic->openai", "/anthropic/v1/messages",
			`{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`,
			chat.Anthropic, e.gpt, "/v1/chat/completions", "anthropic->openai", "gpt-4o-mini"},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(tt.name+map[bool]string{true: "/stream"}[stream], func(t *testing.T) {
				before := tt.to.Provider.Calls()
				b := tt.body
				if stream {
					b = strings.Replace(b, "{", `{"stream":true,`, 1)
				}
				resp := e.do(http.MethodPost, tt.path, b)
				got := body(t, resp)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, got)
				}
				if h := resp.Header.Get("Sluice-Translated"); h != tt.label {
					t.Errorf("Sluice-Translated %q, want %q", h, tt.label)
				}
				if m := resp.Header.Get("Sluice-Model"); m != tt.model {
					t.Errorf("Sluice-Model %q, want %q", m, tt.model)
				}
				if n := tt.to.Provider.Calls() - before; n != 1 {
					t.Fatalf("fallback calls %d, want 1", n)
				}
				reqs := tt.to.Provider.Requests()
				sent := reqs[len(reqs)-1]
				if sent.Path != tt.toPath {
					t.Errorf("the fallback was asked at %s, want %s", sent.Path, tt.toPath)
				}
				if k := sent.Header.Get("X-Api-Key") + strings.TrimPrefix(sent.Header.Get("Authorization"), "Bearer "); k != "sk-injected-1234" {
					t.Errorf("the fallback got key %q, want its own", k)
				}
				var a *chat.Answer
				if stream {
					var ce *chat.Error
					var done bool
					if a, ce, done = readStream(t, tt.codec, got); ce != nil || !done {
						t.Fatalf("stream ended with %v, done %v:\n%s", ce, done, got)
					}
				} else {
					var err error
					if a, err = tt.codec.DecodeAnswer([]byte(got)); err != nil {
						t.Fatalf("the client's codec cannot read %s: %v", got, err)
					}
				}
				if len(a.Content) != 1 || a.Content[0].Text != "This is a fake answer." || a.Stop != chat.StopEndTurn {
					t.Errorf("answer %+v", a)
				}
			})
		}
	}
}

// A request the fallback cannot take (two choices, where Anthropic
// answers one) skips it without a call, logged skipped, and the client
// gets the primary's own answer.
func TestGatewayTranslatedSkip(t *testing.T) {
	e := newXLEnv(t)
	resp := e.do(http.MethodPost, "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","n":2,"messages":[{"role":"user","content":"hi"}]}`)
	got := body(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Sluice-Provider") != "openai" || resp.Header.Get("Sluice-Translated") != "" {
		t.Errorf("status %d from %s: %s; want the primary's 503", resp.StatusCode, resp.Header.Get("Sluice-Provider"), got)
	}
	if n := e.claude.Provider.Calls(); n != 0 {
		t.Errorf("the skipped fallback got %d calls", n)
	}
	lines := e.logLines()
	if len(lines) != 2 || lines[1]["outcome"] != "skipped" || lines[1]["provider"] != "claude" ||
		!strings.HasPrefix(lines[1]["error"].(string), "skipped: ") {
		t.Errorf("log %v, want the primary's line and a skipped one", lines)
	}
}

// An Anthropic client gets, through the gateway, a tool call an OpenAI
// fallback streamed with its arguments in pieces: a tool_use block with
// its id and name, its input as input_json_delta events, stop_reason
// tool_use and the usage.
func TestGatewayTranslatedToolCallStream(t *testing.T) {
	const args = `{"city":"Paris","days":3}`
	gpt := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := func(delta, finish string) {
			io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":`+delta+`,"finish_reason":`+finish+`}]}`+"\n\n")
		}
		chunk(`{"role":"assistant","content":null}`, "null")
		chunk(`{"tool_calls":[{"index":0,"id":"call_abc","type":"function","function":{"name":"weather","arguments":""}}]}`, "null")
		for _, piece := range []string{`{"city":`, `"Paris","da`, `ys":3}`} {
			b, _ := json.Marshal(piece)
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":`+string(b)+`}}]}`, "null")
		}
		chunk(`{}`, `"tool_calls"`)
		io.WriteString(w, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":7,"total_tokens":19}}`+"\n\n")
		io.WriteString(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(gpt.Close)
	e := newXLEnvAt(t, gpt.URL, nil)
	resp := e.do(http.MethodPost, "/anthropic/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"stream":true,`+
		`"messages":[{"role":"user","content":"weather?"}],"tools":[{"name":"weather","input_schema":{"type":"object"}}]}`)
	got := body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Translated") != "anthropic->openai" {
		t.Fatalf("status %d (%s): %s", resp.StatusCode, resp.Header.Get("Sluice-Translated"), got)
	}
	if n := strings.Count(got, "input_json_delta"); n != 3 {
		t.Errorf("%d input_json_delta events, want the 3 pieces:\n%s", n, got)
	}
	a, ce, done := readStream(t, chat.Anthropic, got)
	if ce != nil || !done {
		t.Fatalf("stream ended with %v, done %v:\n%s", ce, done, got)
	}
	if len(a.Content) != 1 || a.Content[0].ToolCall == nil {
		t.Fatalf("content %+v, want one tool call:\n%s", a.Content, got)
	}
	if tc := a.Content[0].ToolCall; tc.ID != "call_abc" || tc.Name != "weather" || string(tc.Args) != args {
		t.Errorf("tool call %s %s %s", tc.ID, tc.Name, tc.Args)
	}
	if a.Stop != chat.StopToolUse || a.Usage.Input != 12 || a.Usage.Output != 7 {
		t.Errorf("stop %q, usage %+v", a.Stop, a.Usage)
	}
}
