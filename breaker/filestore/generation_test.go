//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filestore

import (
	"errors"
	"testing"
	"testing/synctest"
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
// (Failures 2), waits out its cool period of 10 s, closes it with a probe,
// and only then reports the first permit's Failure. It returns the
// breaker. Run it in a synctest bubble: the cool period is fake time, and
// no probe is admitted a nanosecond before it ends.
func cycleWithStalePermit(t *testing.T, store breaker.Store) *breaker.Breaker {
	t.Helper()
	const cool = 10 * time.Second
	b := breaker.New("p", breaker.Settings{Failures: 2, Cool: cool, Lease: time.Minute}, store)
	stale, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	fail(t, b, 2)
	if got := stateOf(t, b); got != breaker.Open {
		t.Fatalf("after 2 failures: %s, want open", got)
	}
	time.Sleep(cool - time.Nanosecond)
	if _, err := b.Allow(); !errors.Is(err, breaker.ErrOpen) {
		t.Fatalf("a nanosecond before the cool period ends: %v, want open", err)
	}
	time.Sleep(time.Nanosecond)
	probe, err := b.Allow()
	if err != nil || probe.State() != breaker.HalfOpen {
		t.Fatalf("when the cool period ends: %v, want a half-open probe", err)
	}
	probe.Done(breaker.Success, time.Millisecond)
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
	synctest.Test(t, func(t *testing.T) {
		f, err := Open(t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		checkStaleFailureIgnored(t, cycleWithStalePermit(t, f))
	})
}
