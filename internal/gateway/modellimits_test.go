package gateway

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

// limitsEnv is a gateway, configured from YAML, whose provider openai is
// down (503) and whose route /openai falls back to small (OpenAI's
// dialect; small-1 declared without tools, with a context of 8) and then
// to claude (Anthropic's; claude-* declared without images).
type limitsEnv struct {
	*env
	small, claude *fake.Server
}

// newLimitsEnv builds it; primary, when not "", is the declaration of the
// primary's models.
func newLimitsEnv(t *testing.T, primary string) *limitsEnv {
	t.Helper()
	small, claude := fake.NewServer("200"), fake.NewServer("200")
	t.Cleanup(small.Close)
	t.Cleanup(claude.Close)
	e := newEnvWith(t, "503", func(cfg *config.Config) {
		src := fmt.Sprintf(`
state: {backend: memory}
providers:
  openai: {kind: openai, base_url: %q, models: {%s}}
  small:
    kind: openai
    base_url: %q
    api_key_env: UPSTREAM_KEY
    models:
      small-1: {tools: false, context: 8}
  claude:
    kind: anthropic
    base_url: %q
    api_key_env: UPSTREAM_KEY
    models:
      claude-*: {images: false}
routes:
  - {prefix: /openai, provider: openai, fallbacks: [{provider: small, model: small-1}, {provider: claude, model: claude-haiku-4-5}]}
policies:
  interactive: {retry: {max_attempts: 1}}
`, cfg.Providers["openai"].BaseURL, primary, small.URL, claude.URL)
		parsed, err := config.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		*cfg = *parsed
	}, Options{})
	return &limitsEnv{env: e, small: small, claude: claude}
}

// lines waits for n attempt lines and returns each as provider:outcome,
// and the skipped lines' errors.
func (e *limitsEnv) lines(n int) (got, skipped []string) {
	e.t.Helper()
	waitFor(e.t, fmt.Sprintf("%d attempt lines", n), func() bool { return len(e.logLines()) >= n })
	for _, l := range e.logLines() {
		got = append(got, fmt.Sprint(l["provider"], ":", l["outcome"]))
		if l["outcome"] == "skipped" {
			skipped = append(skipped, fmt.Sprint(l["error"]))
		}
	}
	return got, skipped
}

// Through the config: a fallback whose model is declared unable to take
// the request is skipped without a call, logged with its reason; when
// every fallback is skipped the client gets the primary's own answer.
func TestGatewayModelLimits(t *testing.T) {
	const (
		plain = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"Weather in Paris?"}]}`
		long  = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"What will the weather be like in Paris tomorrow morning, please?"}]}`
		tools = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
		both  = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"Where is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	)
	for _, tt := range []struct {
		name, body     string
		status         int
		provider       string
		small, claude  int // calls
		lines, skipped []string
	}{
		{"fits", plain, 200, "small", 1, 0, []string{"openai:retry", "small:ok"}, nil},
		{"tools", tools, 200, "claude", 0, 1, []string{"openai:retry", "small:skipped", "claude:ok"},
			[]string{"skipped: sluice: model small-1 is declared without tools"}},
		{"context", long, 200, "claude", 0, 1, []string{"openai:retry", "small:skipped", "claude:ok"},
			[]string{"skipped: sluice: the request holds at least 11 tokens; model small-1 is declared with a context of 8"}},
		{"every fallback", both, 503, "openai", 0, 0, []string{"openai:retry", "small:skipped", "claude:skipped"},
			[]string{"skipped: sluice: model small-1 is declared without tools", "skipped: sluice: model claude-haiku-4-5 is declared without images"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newLimitsEnv(t, "")
			resp := e.do(http.MethodPost, "/openai/v1/chat/completions", tt.body)
			got := body(t, resp)
			if resp.StatusCode != tt.status || resp.Header.Get("Sluice-Provider") != tt.provider {
				t.Fatalf("status %d from %s: %s; want %d from %s", resp.StatusCode, resp.Header.Get("Sluice-Provider"), got, tt.status, tt.provider)
			}
			if tt.status == 503 && !strings.Contains(got, `"error"`) {
				t.Errorf("the answer %s is not the primary's own error", got)
			}
			if s, c := e.small.Provider.Calls(), e.claude.Provider.Calls(); s != tt.small || c != tt.claude {
				t.Errorf("calls: small %d, claude %d; want %d, %d", s, c, tt.small, tt.claude)
			}
			lines, skipped := e.lines(len(tt.lines))
			if !slices.Equal(lines, tt.lines) || !slices.Equal(skipped, tt.skipped) {
				t.Errorf("lines %v, skipped %q; want %v, %q", lines, skipped, tt.lines, tt.skipped)
			}
		})
	}
}

// The route's provider is checked too: declared unable, it is skipped;
// every target skipped, it is called after all and the client gets its
// own answer.
func TestGatewayModelLimitsPrimary(t *testing.T) {
	const tools = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]}`
	e := newLimitsEnv(t, "gpt-4o: {tools: false}")
	resp := e.do(http.MethodPost, "/openai/v1/chat/completions", tools)
	got := body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "claude" || e.up.Provider.Calls() != 0 {
		t.Fatalf("status %d from %s, %d calls to openai: %s; want claude's answer, openai skipped", resp.StatusCode,
			resp.Header.Get("Sluice-Provider"), e.up.Provider.Calls(), got)
	}
	if lines, _ := e.lines(3); !slices.Equal(lines, []string{"openai:skipped", "small:skipped", "claude:ok"}) {
		t.Errorf("lines %v", lines)
	}

	e = newLimitsEnv(t, "gpt-4o: {tools: false}")
	both := strings.Replace(tools, `"content":"Weather in Paris?"`,
		`"content":[{"type":"text","text":"Where?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]`, 1)
	resp = e.do(http.MethodPost, "/openai/v1/chat/completions", both)
	got = body(t, resp)
	if resp.StatusCode != 503 || resp.Header.Get("Sluice-Provider") != "openai" || e.up.Provider.Calls() != 1 {
		t.Fatalf("status %d from %s, %d calls to openai: %s; want openai's own 503 from one call", resp.StatusCode,
			resp.Header.Get("Sluice-Provider"), e.up.Provider.Calls(), got)
	}
	if lines, _ := e.lines(4); !slices.Equal(lines, []string{"openai:skipped", "small:skipped", "claude:skipped", "openai:fail"}) {
		t.Errorf("lines %v", lines)
	}
}
