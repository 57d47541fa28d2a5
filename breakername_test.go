package sluice

import "testing"

// BreakerName reads the policy with its defaults, so a fresh Transport
// names its breakers as it will once it has made a call.
func TestBreakerNameBeforeFirstCall(t *testing.T) {
	tr := &Transport{Policy: Policy{BreakerScope: ScopeModel}}
	if got := tr.BreakerName("anthropic", "claude"); got != "anthropic/claude" {
		t.Errorf("fresh Transport: BreakerName = %q, want anthropic/claude", got)
	}
	tr.init()
	if got := tr.BreakerName("anthropic", "claude"); got != "anthropic/claude" {
		t.Errorf("after init: BreakerName = %q, want anthropic/claude", got)
	}
	if got := (&Transport{}).BreakerName("anthropic", "claude"); got != "anthropic" {
		t.Errorf("default scope: BreakerName = %q, want anthropic", got)
	}
}
