package sluice

import (
	"strconv"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

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

// A Transport keeps at most maxBreakers breakers however many names its
// calls bring (a client naming a new model each call, under ScopeModel),
// and a breaker it forgot is the same breaker made again: its record is
// the store's.
func TestBreakersBounded(t *testing.T) {
	tr := &Transport{Policy: Policy{BreakerScope: ScopeModel, Breaker: breaker.Settings{Failures: 1, Cool: time.Hour}}}
	p, err := tr.Breaker("openai/kept").Allow()
	if err != nil {
		t.Fatal(err)
	}
	p.Done(breaker.Failure, time.Millisecond)
	for i := range 3 * maxBreakers {
		tr.Breaker(tr.BreakerName("openai", "model-"+strconv.Itoa(i)))
	}
	n := 0
	tr.breakers.Range(func(any, any) bool { n++; return true })
	if n > maxBreakers {
		t.Errorf("the Transport holds %d breakers, want at most %d", n, maxBreakers)
	}
	rec, err := tr.Breaker("openai/kept").Record()
	if err != nil || rec.State != breaker.Open {
		t.Errorf("openai/kept after the flood: %+v, %v; want it open still", rec, err)
	}
}
