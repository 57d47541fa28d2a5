//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filestore

import (
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

func fail(t *testing.T, b *breaker.Breaker, n int) {
	t.Helper()
	for range n {
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("Allow: %v", err)
		}
		p.Done(breaker.Failure, time.Millisecond)
	}
}

// cycleWithStalePermit takes a permit while closed, opens the breaker
// (Failures 2), waits out its cool period, closes it with a probe, and
// only then reports the first permit's Failure. It returns the breaker.
func cycleWithStalePermit(t *testing.T, store breaker.Store) *breaker.Breaker {
	t.Helper()
	b := breaker.New("p", breaker.Settings{Failures: 2, Cool: time.Millisecond, Lease: time.Minute}, store)
	stale, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	fail(t, b, 2)
	if got := stateOf(t, b); got != breaker.Open {
		t.Fatalf("after 2 failures: %s, want open", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		probe, err := b.Allow()
		if err == nil && probe.State() == breaker.HalfOpen {
			probe.Done(breaker.Success, time.Millisecond)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no probe within 5s: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	if got := stateOf(t, b); got != breaker.Closed {
		t.Fatalf("after the probe's success: %s, want closed", got)
	}
	stale.Done(breaker.Failure, time.Millisecond)
	return b
}

// checkStaleFailureIgnored asserts that the stale Failure counted nothing:
// no failure recorded, and one fresh failure leaves the breaker closed.
func checkStaleFailureIgnored(t *testing.T, b *breaker.Breaker) {
	t.Helper()
	rec, err := b.Record()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Failures != 0 || rec.State != breaker.Closed || rec.Transitions != 3 {
		t.Fatalf("after a stale failure: %+v, want closed, 0 failures, 3 transitions", rec)
	}
	fail(t, b, 1)
	if got := stateOf(t, b); got != breaker.Closed {
		t.Fatalf("one fresh failure after a stale one opened the breaker (%s)", got)
	}
}

func TestStalePermitFromEarlierCycleIgnored(t *testing.T) {
	f, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	checkStaleFailureIgnored(t, cycleWithStalePermit(t, f))
}
