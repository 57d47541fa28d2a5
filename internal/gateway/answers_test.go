package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/config"
)

const wholeJSON = `{"id":"chatcmpl-2","object":"chat.completion","choices":[{"message":{"content":"second"}}]}`

// jsonUpstream's n-th call plays steps[n] (the last repeats): "ok" a whole
// JSON answer, "stall" a 200's headers and part of its body then silence,
// "cut" the same then a closed connection.
type jsonUpstream struct {
	mu    sync.Mutex
	steps []string
	calls int
	done  chan struct{}
}

func (j *jsonUpstream) Calls() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.calls
}

func (j *jsonUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	j.mu.Lock()
	step := j.steps[min(j.calls, len(j.steps)-1)]
	j.calls++
	j.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if step == "ok" {
		io.WriteString(w, wholeJSON)
		return
	}
	w.Header().Set("Content-Length", "200")
	w.WriteHeader(200)
	io.WriteString(w, `{"id":"chatcmpl-1","choi`)
	rc := http.NewResponseController(w)
	rc.Flush()
	if step == "cut" {
		if conn, _, err := rc.Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	select {
	case <-r.Context().Done():
	case <-j.done:
	}
}

// jsonEnv is a gateway whose openai provider is a jsonUpstream.
func jsonEnv(t *testing.T, steps ...string) (*env, *jsonUpstream) {
	up := &jsonUpstream{steps: steps, done: make(chan struct{})}
	srv := httptest.NewServer(up)
	e := newEnv(t, "200", func(c *config.Config) {
		c.Providers["openai"] = config.Provider{Kind: config.KindOpenAI, BaseURL: srv.URL, MaxConcurrent: 8}
	})
	t.Cleanup(func() {
		close(up.done)
		srv.CloseClientConnections()
		srv.Close()
	})
	return e, up
}

func TestJSONStalledBodyRetried(t *testing.T) {
	for _, step := range []string{"stall", "cut"} {
		t.Run(step, func(t *testing.T) {
			e, up := jsonEnv(t, step, "ok")
			resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
			if got := body(t, resp); resp.StatusCode != 200 || got != wholeJSON {
				t.Fatalf("%d %q, want the second answer", resp.StatusCode, got)
			}
			if up.Calls() != 2 || resp.Header.Get("Sluice-Attempts") != "2" {
				t.Errorf("upstream calls %d, Sluice-Attempts %q; want 2", up.Calls(), resp.Header.Get("Sluice-Attempts"))
			}
			if lines := e.logLines(); len(lines) != 2 || lines[0]["outcome"] != "retry" || lines[1]["outcome"] != "ok" {
				t.Errorf("log lines %v, want retry then ok", lines)
			}
		})
	}
}

// A JSON answer that always stalls or is cut gets the gateway's own error
// in the provider's shape, with the usual headers: never an empty reply.
func TestJSONBodyFailingAnswersGatewayError(t *testing.T) {
	for _, tt := range []struct {
		step   string
		status int
		code   string
	}{
		{"stall", 504, "timeout"},
		{"cut", 502, "upstream_unreachable"},
	} {
		t.Run(tt.step, func(t *testing.T) {
			e, up := jsonEnv(t, tt.step)
			resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if code := gatewayError(t, resp, config.KindOpenAI); code != tt.code {
				t.Errorf("code %q, want %s", code, tt.code)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			if got := resp.Header.Get("Sluice-Attempts"); got != "3" || up.Calls() != 3 {
				t.Errorf("Sluice-Attempts %q, upstream calls %d; want 3 (max_attempts)", got, up.Calls())
			}
		})
	}
}

func TestRetryBudgetRefusalsExported(t *testing.T) {
	m := newMetrics(breaker.NewMemory(), nil)
	m.observe(&sluice.Attempt{Provider: "openai", Outcome: sluice.OutcomeFail, Status: 503, RetryBudgetExhausted: true})
	m.observe(&sluice.Attempt{Provider: "openai", Outcome: sluice.OutcomeRetry, Status: 503})
	rec := httptest.NewRecorder()
	m.handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `sluice_retry_budget_exhausted_total{provider="openai"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s", want)
	}
}
