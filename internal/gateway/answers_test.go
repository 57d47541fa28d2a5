package gateway

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
)

func TestJSONStalledBodyRetried(t *testing.T) {
	for _, step := range []string{"stall", "cut"} {
		t.Run(step, func(t *testing.T) {
			e := newEnv(t, step+",200", nil)
			resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
			got := body(t, resp)
			// Whole JSON, so neither the first answer's half nor a mix of both.
			if resp.StatusCode != 200 || !json.Valid([]byte(got)) || !strings.Contains(got, `"content":"`+fakeAnswer+`"`) {
				t.Fatalf("%d %q, want the second answer whole", resp.StatusCode, got)
			}
			if e.up.Calls() != 2 || resp.Header.Get("Sluice-Attempts") != "2" {
				t.Errorf("upstream calls %d, Sluice-Attempts %q; want 2", e.up.Calls(), resp.Header.Get("Sluice-Attempts"))
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
			e := newEnv(t, tt.step, nil)
			resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if code := gatewayError(t, resp, "openai"); code != tt.code {
				t.Errorf("code %q, want %s", code, tt.code)
			}
			if resp.Header.Get("X-Request-Id") == "" {
				t.Error("no X-Request-Id")
			}
			if got := resp.Header.Get("Sluice-Attempts"); got != "3" || e.up.Calls() != 3 {
				t.Errorf("Sluice-Attempts %q, upstream calls %d; want 3 (max_attempts)", got, e.up.Calls())
			}
		})
	}
}

func TestRetryBudgetRefusalsExported(t *testing.T) {
	m := newMetrics(breaker.NewMemory(), nil, nil)
	m.observe(&sluice.Attempt{Provider: "openai", Outcome: sluice.OutcomeFail, Status: 503, RetryBudgetExhausted: true})
	m.observe(&sluice.Attempt{Provider: "openai", Outcome: sluice.OutcomeRetry, Status: 503})
	rec := httptest.NewRecorder()
	m.handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `sluice_retry_budget_exhausted_total{provider="openai"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s", want)
	}
}
