package breaker

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// changes records the calls of an OnStateChange hook, one line each:
// "name from→to #transitions", and the reason of an open.
type changes struct {
	mu  sync.Mutex
	got []string
}

func (c *changes) hook(name string, from State, to Record) {
	line := fmt.Sprintf("%s %s→%s #%d", name, from, to.State, to.Transitions)
	if to.State == Open {
		line += " " + to.Reason
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, line)
}

// expect fails the test unless the hook was called with want since the
// last expect, in that order.
func (c *changes) expect(t *testing.T, step string, want ...string) {
	t.Helper()
	c.mu.Lock()
	got := c.got
	c.got = nil
	c.mu.Unlock()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: OnStateChange calls %q, want %q", step, got, want)
	}
}

// Every change of state a breaker makes is reported once, from the state
// it left to the record it made, and nothing else is: not a failure that
// does not open it, a refusal, a stale outcome, a probe handed on or taken
// over, a reset of a closed breaker.
func TestOnStateChangeReportsEachChangeOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c changes
		s := testSettings // Failures 3, Cool 10s, Lease 5s, Slow 2 over 1s
		s.OnStateChange = c.hook
		b := New("p", s, nil)
		stale, _ := b.Allow()
		fail(t, b, 2)
		c.expect(t, "2 failures")
		fail(t, b, 1)
		c.expect(t, "the 3rd failure", "p closed→open #1 failures")
		stale.Done(Failure, 0)
		if _, err := b.Allow(); err == nil {
			t.Fatal("an open breaker admitted a call")
		}
		c.expect(t, "a stale failure and a refusal")

		time.Sleep(10 * time.Second)
		probe, err := b.Allow()
		if err != nil || probe.State() != HalfOpen {
			t.Fatalf("after the cool period: %v, want the probe", err)
		}
		c.expect(t, "the probe taken", "p open→half_open #2")
		if _, err := b.Allow(); err == nil {
			t.Fatal("a second probe was admitted")
		}
		probe.Done(Ignored, 0) // handed on: still half-open
		probe, _ = b.Allow()
		c.expect(t, "the probe refused to another, ignored, taken again")
		probe.Done(Failure, 0)
		c.expect(t, "the probe failed", "p half_open→open #3 probe_failed")

		time.Sleep(10 * time.Second)
		lost, _ := b.Allow()
		time.Sleep(5 * time.Second) // its lease ends: the next caller takes the probe over
		probe, _ = b.Allow()
		lost.Done(Success, 0)
		c.expect(t, "a probe taken over, the lost one's success", "p open→half_open #4")
		probe.Done(Success, 0)
		c.expect(t, "the probe's success", "p half_open→closed #5")

		for range 2 {
			p, _ := b.Allow()
			p.Done(Success, 2*time.Second)
		}
		c.expect(t, "2 slow successes", "p closed→open #6 slow")
		b.Reset()
		c.expect(t, "a reset", "p open→closed #7")
		b.Reset()
		c.expect(t, "a reset of a closed breaker")
	})
}

// Many callers on several breakers of one name and one store (as a
// gateway's Transports have) fail at once, race for the probe, reset at
// once: each change is reported once, by whichever breaker made it.
func TestOnStateChangeOnceUnderRace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c changes
		s := Settings{Failures: 5, Cool: time.Second, OnStateChange: c.hook}
		store := NewMemory()
		breakers := []*Breaker{New("p", s, store), New("p", s, store), New("p", s, store), New("p", s, store)}
		all := func(f func(b *Breaker)) {
			var wg sync.WaitGroup
			for i := range 64 {
				wg.Go(func() { f(breakers[i%len(breakers)]) })
			}
			wg.Wait()
		}
		permits := make(chan Permit, 64)
		all(func(b *Breaker) {
			p, _ := b.Allow()
			permits <- p
		})
		close(permits)
		var wg sync.WaitGroup
		for p := range permits {
			wg.Go(func() { p.Done(Failure, 0) })
		}
		wg.Wait()
		c.expect(t, "64 failures at once", "p closed→open #1 failures")

		time.Sleep(time.Second)
		probes := make(chan Permit, 64)
		all(func(b *Breaker) {
			if p, err := b.Allow(); err == nil {
				probes <- p
			}
		})
		close(probes)
		if len(probes) != 1 {
			t.Fatalf("%d probes admitted, want 1", len(probes))
		}
		c.expect(t, "64 callers after the cool period", "p open→half_open #2")
		(<-probes).Done(Failure, 0)
		c.expect(t, "the probe failed", "p half_open→open #3 probe_failed")
		all(func(b *Breaker) { b.Reset() })
		c.expect(t, "64 resets at once", "p open→closed #4")
	})
}

// The hook is called with no lock held: one that calls the breaker back
// (reads it, asks it, resets it) does not deadlock, and its own change is
// reported in turn.
func TestOnStateChangeMayCallTheBreaker(t *testing.T) {
	var c changes
	var b *Breaker
	s := Settings{Failures: 1, Cool: time.Hour}
	s.OnStateChange = func(name string, from State, to Record) {
		c.hook(name, from, to)
		if to.State != Open {
			return
		}
		if r, err := b.Record(); err != nil || r.State != Open {
			t.Errorf("the hook reads %+v, %v; want the open record", r, err)
		}
		if _, err := b.Allow(); err == nil {
			t.Error("the hook was admitted while open")
		}
		b.Reset()
	}
	b = New("p", s, nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p, _ := b.Allow()
		p.Done(Failure, 0)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a hook that calls the breaker back is still blocked after 10 s")
	}
	c.expect(t, "a failure whose hook resets the breaker", "p closed→open #1 failures", "p open→closed #2")
}
