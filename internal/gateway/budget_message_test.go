package gateway

import (
	"net/http"
	"strings"
	"testing"
)

// TestUnpricedModelHasItsOwnType: a model with no price under a budget is
// a 400 of type unpriced_model, not budget_exhausted (which is a 429).
func TestUnpricedModelHasItsOwnType(t *testing.T) {
	e := newEnv(t, "200", tenCentCalls(1, "all"))
	resp := e.do("POST", "/openai/v1/chat/completions", `{"model":"o9-unknown","messages":[]}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	if code := gatewayError(t, resp, "openai"); code != "unpriced_model" {
		t.Errorf("type %q, want unpriced_model", code)
	}
}

// TestBudgetRefusalSaysTheAssumedMaxTokens: a call refused because its
// worst case assumed the default max_tokens says so, and how to fix it; a
// call that named its max_tokens is not told to.
func TestBudgetRefusalSaysTheAssumedMaxTokens(t *testing.T) {
	// $0.15 left under the cap: a call with max_tokens 5 costs $0.10, one
	// without it assumes 4096 output tokens ($81.92) and is refused.
	e := newEnv(t, "200", tenCentCalls(0.15, "all"))
	resp := e.do("POST", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[]}`)
	msg := body(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429: %s", resp.StatusCode, msg)
	}
	for _, want := range []string{"no max_tokens", "4096 output tokens were assumed", "set max_tokens", "worst case $81.92"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %s lacks %q", msg, want)
		}
	}
	if e.up.Calls() != 0 {
		t.Errorf("%d upstream calls, want 0", e.up.Calls())
	}
	resp = e.do("POST", "/openai/v1/chat/completions", cappedBody)
	body(t, resp)
	resp = e.do("POST", "/openai/v1/chat/completions", cappedBody)
	msg = body(t, resp)
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("second capped call: status %d, want 429", resp.StatusCode)
	}
	if strings.Contains(msg, "max_tokens") {
		t.Errorf("a call that set max_tokens is told about it: %s", msg)
	}
}
