package breaker

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

var testSettings = Settings{
	Failures: 3, Cool: 10 * time.Second, Lease: 5 * time.Second,
	Slow: Slow{Threshold: time.Second, Count: 2, Window: time.Minute},
}

func fail(t *testing.T, b *Breaker, n int) {
	t.Helper()
	for range n {
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("Allow: %v", err)
		}
		p.Done(Failure, time.Millisecond)
	}
}

func state(t *testing.T, b *Breaker) State {
	t.Helper()
	r, err := b.Record()
	if err != nil {
		t.Fatal(err)
	}
	return r.State
}

func TestOpensAfterExactlyFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("p", testSettings, nil)
		fail(t, b, 2)
		if got := state(t, b); got != Closed {
			t.Fatalf("after 2 failures: %v, want closed", got)
		}
		fail(t, b, 1)
		if got := state(t, b); got != Open {
			t.Fatalf("after 3 failures: %v, want open", got)
		}
		_, err := b.Allow()
		var oe *OpenError
		if !errors.As(err, &oe) || !errors.Is(err, ErrOpen) {
			t.Fatalf("Allow while open: %v, want *OpenError", err)
		}
		if want := time.Now().Add(10 * time.Second); !oe.Until.Equal(want) {
			t.Errorf("Until = %v, want %v", oe.Until, want)
		}
	})
}

func TestSuccessResetsConsecutiveCount(t *testing.T) {
	b := New("p", testSettings, nil)
	fail(t, b, 2)
	p, _ := b.Allow()
	p.Done(Success, 0)
	fail(t, b, 2)
	if got := state(t, b); got != Closed {
		t.Fatalf("2+success+2 failures: %v, want closed", got)
	}
}

func TestIgnoredNeverOpensNorResets(t *testing.T) {
	b := New("p", testSettings, nil)
	for range 100 {
		p, _ := b.Allow()
		p.Done(Ignored, 0)
	}
	if got := state(t, b); got != Closed {
		t.Fatalf("100 ignored outcomes: %v, want closed", got)
	}
	fail(t, b, 2)
	p, _ := b.Allow()
	p.Done(Ignored, 0)
	fail(t, b, 1)
	if got := state(t, b); got != Open {
		t.Fatalf("failures around an ignored outcome: %v, want open", got)
	}
}

func TestOneProbeAfterCool(t *testing.T) {
	for trial := range 50 {
		synctest.Test(t, func(t *testing.T) {
			b := New("p", testSettings, nil)
			fail(t, b, 3)
			time.Sleep(10 * time.Second)
			var admitted atomic.Int32
			var permits sync.Map
			var wg sync.WaitGroup
			for i := range 64 {
				wg.Go(func() {
					p, err := b.Allow()
					if err == nil {
						admitted.Add(1)
						permits.Store(i, p)
					} else if !errors.Is(err, ErrOpen) {
						t.Errorf("Allow: %v", err)
					}
				})
			}
			wg.Wait()
			if got := admitted.Load(); got != 1 {
				t.Fatalf("trial %d: %d probes admitted, want exactly 1", trial, got)
			}
			permits.Range(func(_, v any) bool {
				p := v.(Permit)
				if p.State() != HalfOpen {
					t.Errorf("probe permit state %v, want half_open", p.State())
				}
				p.Done(Success, time.Millisecond)
				return true
			})
			if got := state(t, b); got != Closed {
				t.Fatalf("after probe success: %v, want closed", got)
			}
		})
	}
}

func TestProbeFailureRestartsCool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("p", testSettings, nil)
		fail(t, b, 3)
		time.Sleep(10 * time.Second)
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Second)
		p.Done(Failure, 2*time.Second)
		if got := state(t, b); got != Open {
			t.Fatalf("after failed probe: %v, want open", got)
		}
		time.Sleep(10*time.Second - time.Nanosecond)
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Fatalf("just before the new cool ends: %v, want open", err)
		}
		time.Sleep(time.Nanosecond)
		if _, err := b.Allow(); err != nil {
			t.Fatalf("when the new cool ends: %v, want a probe", err)
		}
	})
}

func TestHungProbeReleasedAfterLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("p", testSettings, nil)
		fail(t, b, 3)
		time.Sleep(10 * time.Second)
		hung, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		_, err = b.Allow()
		var oe *OpenError
		if !errors.As(err, &oe) || oe.State != HalfOpen {
			t.Fatalf("second caller during probe: %v, want half-open refusal", err)
		}
		time.Sleep(5 * time.Second) // the lease
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("after the lease: %v, want a new probe", err)
		}
		hung.Done(Success, 0) // the old holder reports late: ignored
		if got := state(t, b); got != HalfOpen {
			t.Fatalf("late report of the expired probe changed state to %v", got)
		}
		p.Done(Success, 0)
		if got := state(t, b); got != Closed {
			t.Fatalf("after new probe success: %v, want closed", got)
		}
	})
}

func TestIgnoredProbeHandsOver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("p", testSettings, nil)
		fail(t, b, 3)
		time.Sleep(10 * time.Second)
		p, _ := b.Allow()
		p.Done(Ignored, 0)
		p2, err := b.Allow()
		if err != nil {
			t.Fatalf("after an ignored probe: %v, want the next probe", err)
		}
		p2.Done(Success, 0)
		if got := state(t, b); got != Closed {
			t.Fatalf("%v, want closed", got)
		}
	})
}

func TestSlowSuccessesOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("p", testSettings, nil)
		p, _ := b.Allow()
		p.Done(Success, 2*time.Second)
		time.Sleep(61 * time.Second) // the first slow one leaves the window
		p, _ = b.Allow()
		p.Done(Success, 2*time.Second)
		if got := state(t, b); got != Closed {
			t.Fatalf("slow attempts a window apart: %v, want closed", got)
		}
		p, _ = b.Allow()
		p.Done(Success, time.Second)
		r, _ := b.Record()
		if r.State != Open || r.Reason != "slow" {
			t.Fatalf("two slow attempts within the window: %+v, want open (slow)", r)
		}
	})
}

func TestLateOutcomesWhileOpenIgnored(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New("p", testSettings, nil)
		early, _ := b.Allow()
		fail(t, b, 3)
		early.Done(Success, 0)
		if got := state(t, b); got != Open {
			t.Fatalf("late success of an early call: %v, want still open", got)
		}
	})
}

func TestReset(t *testing.T) {
	b := New("p", testSettings, nil)
	fail(t, b, 3)
	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Allow(); err != nil {
		t.Fatalf("after reset: %v", err)
	}
}

func TestNextTable(t *testing.T) {
	s := testSettings
	now := time.Unix(1000, 0)
	n := now.UnixNano()
	tests := []struct {
		name string
		r    Record
		e    Event
		want Record
	}{
		{"closed failure counts", Record{Failures: 1}, Event{Kind: EventFailure}, Record{Failures: 2}},
		{"closed failure opens", Record{Failures: 2}, Event{Kind: EventFailure},
			Record{State: Open, Until: n + int64(10*time.Second), Reason: "failures", Changed: n}},
		{"open acquire early", Record{State: Open, Until: n + 1}, Event{Kind: Acquire, Token: 7},
			Record{State: Open, Until: n + 1}},
		{"open acquire due", Record{State: Open, Until: n}, Event{Kind: Acquire, Token: 7},
			Record{State: HalfOpen, Probe: 7, Until: n + int64(5*time.Second), Changed: n}},
		{"half-open acquire taken", Record{State: HalfOpen, Probe: 7, Until: n + 1}, Event{Kind: Acquire, Token: 9},
			Record{State: HalfOpen, Probe: 7, Until: n + 1}},
		{"half-open lease over", Record{State: HalfOpen, Probe: 7, Until: n}, Event{Kind: Acquire, Token: 9},
			Record{State: HalfOpen, Probe: 9, Until: n + int64(5*time.Second)}},
		{"probe success closes", Record{State: HalfOpen, Probe: 7}, Event{Kind: EventSuccess, Token: 7},
			Record{State: Closed, Changed: n}},
		{"stranger's failure in half-open", Record{State: HalfOpen, Probe: 7}, Event{Kind: EventFailure},
			Record{State: HalfOpen, Probe: 7}},
		{"trip", Record{}, Event{Kind: EventTrip},
			Record{State: Open, Until: n + int64(10*time.Second), Reason: "manual", Changed: n}},
	}
	for _, tt := range tests {
		got := s.Next(tt.r, tt.e, now)
		if got.State != tt.want.State || got.Failures != tt.want.Failures || got.Until != tt.want.Until ||
			got.Probe != tt.want.Probe || got.Reason != tt.want.Reason || got.Changed != tt.want.Changed {
			t.Errorf("%s: got %+v, want %+v", tt.name, got, tt.want)
		}
	}
}

func TestNextDoesNotShareSlowSlice(t *testing.T) {
	s := testSettings
	s.Slow.Count = 5
	r := Record{Slow: make([]int64, 1, 8)}
	now := time.Unix(0, 1)
	a := s.Next(r, Event{Kind: EventSuccess, Slow: true}, now)
	b := s.Next(r, Event{Kind: EventSuccess, Slow: true}, now.Add(time.Nanosecond))
	if a.Slow[len(a.Slow)-1] == b.Slow[len(b.Slow)-1] {
		t.Fatal("two transitions from one record share the slow slice")
	}
}

func BenchmarkClosedAllowDone(b *testing.B) {
	br := New("openai", Settings{Slow: Slow{Threshold: 15 * time.Second}}, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			p.Done(Success, time.Millisecond)
		}
	})
}

func BenchmarkOpenFastFail(b *testing.B) {
	br := New("openai", Settings{Failures: 1, Cool: time.Hour}, nil)
	p, _ := br.Allow()
	p.Done(Failure, 0)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.Allow(); err == nil {
			b.Fatal("admitted while open")
		}
	}
}

func BenchmarkClosedAllowDoneSerial(b *testing.B) {
	br := New("openai", Settings{Slow: Slow{Threshold: 15 * time.Second}}, nil)
	b.ReportAllocs()
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Done(Success, time.Millisecond)
	}
}
