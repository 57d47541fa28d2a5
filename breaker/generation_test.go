package breaker

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// cycleWithStalePermit takes a permit while closed, opens the breaker
// (Failures 2), waits out its cool period of 10 s, closes it with a probe,
// and only then reports the first permit's Failure. It returns the
// breaker. Run it in a synctest bubble: the cool period is fake time, and
// no probe is admitted a nanosecond before it ends.
func cycleWithStalePermit(t *testing.T, store Store) *Breaker {
	t.Helper()
	const cool = 10 * time.Second
	b := New("p", Settings{Failures: 2, Cool: cool, Lease: time.Minute}, store)
	stale, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	fail(t, b, 2)
	if got := state(t, b); got != Open {
		t.Fatalf("after 2 failures: %s, want open", got)
	}
	time.Sleep(cool - time.Nanosecond)
	if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
		t.Fatalf("a nanosecond before the cool period ends: %v, want open", err)
	}
	time.Sleep(time.Nanosecond)
	probe, err := b.Allow()
	if err != nil || probe.State() != HalfOpen {
		t.Fatalf("when the cool period ends: %v, want a half-open probe", err)
	}
	probe.Done(Success, time.Millisecond)
	if got := state(t, b); got != Closed {
		t.Fatalf("after the probe's success: %s, want closed", got)
	}
	stale.Done(Failure, time.Millisecond)
	return b
}

// checkStaleFailureIgnored asserts that the stale Failure counted nothing:
// no failure recorded, and one fresh failure leaves the breaker closed.
func checkStaleFailureIgnored(t *testing.T, b *Breaker) {
	t.Helper()
	rec, err := b.Record()
	if err != nil {
		t.Fatal(err)
	}
	if rec.Failures != 0 || rec.State != Closed || rec.Transitions != 3 {
		t.Fatalf("after a stale failure: %+v, want closed, 0 failures, 3 transitions", rec)
	}
	fail(t, b, 1)
	if got := state(t, b); got != Closed {
		t.Fatalf("one fresh failure after a stale one opened the breaker (%s)", got)
	}
}

func TestStalePermitFromEarlierCycleIgnored(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			checkStaleFailureIgnored(t, cycleWithStalePermit(t, NewMemory()))
		})
	})
}

// An outcome event without a generation is applied as before; one with
// the current generation too; one from an earlier generation is not.
func TestNextChecksGeneration(t *testing.T) {
	s := Settings{Failures: 5}
	r := Record{Failures: 1, Transitions: 4}
	now := time.Unix(100, 0)
	for _, tc := range []struct {
		gen  uint64
		want int
	}{{0, 2}, {5, 2}, {1, 1}, {4, 1}, {6, 1}} {
		if got := s.Next(r, Event{Kind: EventFailure, Gen: tc.gen}, now).Failures; got != tc.want {
			t.Errorf("failure with Gen %d: %d failures, want %d", tc.gen, got, tc.want)
		}
	}
}
