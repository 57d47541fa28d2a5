package idempotency_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/idempotency/storetest"
)

// counting counts the Begins made through it.
type counting struct {
	idempotency.Store
	begins atomic.Int32
}

func (c *counting) Begin(id string, fp [32]byte, lease time.Duration, now time.Time) (idempotency.Result, error) {
	c.begins.Add(1)
	return c.Store.Begin(id, fp, lease, now)
}

func TestWait(t *testing.T) {
	id, fp := storetest.ID("w"), storetest.FP("x")
	tests := []struct {
		name    string
		lease   time.Duration // the holder's
		end     func(s idempotency.Store, m idempotency.Mark)
		endAt   time.Duration
		maxWait time.Duration
		want    idempotency.Verdict
		wantAt  time.Duration // polls at 0, 10, 30, 70, 150, 310, 560, 810 ms...
		polls   int32
	}{
		{"the holder keeps: replay at the next poll", time.Minute, keep, 100 * time.Millisecond, 5 * time.Second, idempotency.Replay, 150 * time.Millisecond, 5},
		{"the holder releases: run", time.Minute, release, 500 * time.Millisecond, 5 * time.Second, idempotency.Run, 560 * time.Millisecond, 7},
		{"still in flight when the wait ends", time.Minute, nil, 0, time.Second, idempotency.InFlight, time.Second, 9},
		{"the holder died: run when its lease ends", 40 * time.Millisecond, nil, 0, 5 * time.Second, idempotency.Run, 40 * time.Millisecond, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &counting{Store: &idempotency.Memory{}}
				start := time.Now()
				first, _ := s.Begin(id, fp, tt.lease, start)
				s.begins.Store(0)
				if tt.end != nil {
					time.AfterFunc(tt.endAt, func() { tt.end(s, first.Mark) })
				}
				r, err := idempotency.Wait(context.Background(), s, id, fp, time.Minute, tt.maxWait)
				if err != nil || r.Verdict != tt.want {
					t.Fatalf("Wait: %v %v, want %v", r.Verdict, err, tt.want)
				}
				if got := time.Since(start); got != tt.wantAt {
					t.Errorf("returned after %v, want %v", got, tt.wantAt)
				}
				if n := s.begins.Load(); n != tt.polls {
					t.Errorf("%d polls, want %d", n, tt.polls)
				}
				if tt.want == idempotency.Run && r.Mark.Token == "" {
					t.Error("run without a mark")
				}
			})
		})
	}
}

func keep(s idempotency.Store, m idempotency.Mark) {
	s.Keep(m, storetest.SampleAnswer("kept"), time.Hour, time.Now())
}

func release(s idempotency.Store, m idempotency.Mark) { s.Release(m) }

func TestWaitEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &idempotency.Memory{}
		id, fp := storetest.ID("w"), storetest.FP("x")
		s.Begin(id, fp, time.Minute, time.Now())
		ctx, cancel := context.WithTimeout(context.Background(), 55*time.Millisecond)
		defer cancel()
		start := time.Now()
		r, err := idempotency.Wait(ctx, s, id, fp, time.Minute, time.Hour)
		if err != context.DeadlineExceeded || r.Verdict != idempotency.InFlight {
			t.Fatalf("Wait: %v %v, want in flight and the deadline", r.Verdict, err)
		}
		if d := time.Since(start); d != 55*time.Millisecond {
			t.Errorf("returned after %v, want 55ms", d)
		}
	})
}
