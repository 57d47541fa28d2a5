package gateway

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/spend/redisledger"
)

// A budget that cannot be checked because its store failed refuses the
// call with 503 budget_exhausted, not the 429 of a spent budget: the body
// says the store failed, no Retry-After promises a reset, and nothing goes
// upstream.
func TestBudgetStoreDownAnswers503(t *testing.T) {
	rs := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { client.Close() })
	e := newEnvWith(t, "200", tenCentCalls(1.00, "all"), Options{Ledger: redisledger.New(client, redisledger.Options{})})
	resp := e.do("POST", "/openai/v1/chat/completions", cappedBody)
	if got := body(t, resp); resp.StatusCode != 200 {
		t.Fatalf("with the store up: status %d: %s", resp.StatusCode, got)
	}
	rs.Kill()
	resp = e.do("POST", "/openai/v1/chat/completions", cappedBody)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var v struct {
		Error struct{ Message, Type, Code string }
	}
	json.Unmarshal(raw, &v)
	want := "sluice: budget daily cannot be checked (the state store failed), so calls are refused"
	if resp.StatusCode != 503 || v.Error.Code != "budget_exhausted" || v.Error.Type != "budget_exhausted" || v.Error.Message != want {
		t.Errorf("with the store down: %d %s; want 503 budget_exhausted %q", resp.StatusCode, raw, want)
	}
	if resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("headers %v: want no Retry-After (no reset is known) and x-should-retry: false", resp.Header)
	}
	if n := e.up.Calls(); n != 1 {
		t.Errorf("upstream calls %d, want 1 (the refused call sent nothing)", n)
	}
	if !strings.Contains(e.logs.String(), `"outcome":"budget_exhausted"`) {
		t.Errorf("no budget_exhausted line in the log:\n%s", e.logs.String())
	}
}
