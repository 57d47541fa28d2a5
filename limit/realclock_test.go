package limit

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
)

// On a real clock, which moves between a call's reservations, calls under
// one bucket or two are admitted in their turn: 20 calls at 6,000 a minute
// take at least 19 slots of 10 ms, and all are admitted within the test's
// bound, on each store. (This machine's clock is too coarse for it to catch
// a pass over the buckets that chases the clock; the gateway's
// TestRateLimitRefusesBeyondMaxQueue hangs on that one.)
func TestWaitRealClock(t *testing.T) {
	fs := newFileStore(t)
	t.Cleanup(func() { fs.Close() })
	for _, store := range []struct {
		name string
		s    Store
	}{{"memory", NewMemory()}, {"file", fs}} {
		for _, lims := range [][]Limit{
			{{Name: "rpm", Requests: Rate{Limit: 6000, Per: time.Minute}}},
			{{Name: "rpm", Requests: Rate{Limit: 6000, Per: time.Minute}, Tokens: Rate{Limit: 6_000_000, Per: time.Minute}},
				{Name: "all", Scope: "all", Requests: Rate{Limit: 60_000, Per: time.Minute}}},
		} {
			l := &Limiter{Store: store.s, Limits: lims}
			start := time.Now()
			done := make(chan struct{})
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					if _, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m-" + store.name + lims[0].Name, BodyBytes: 400, MaxTokens: 900, MaxWait: 5 * time.Second}); err != nil {
						t.Error(err)
					}
				})
			}
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s, %d limits: 20 calls not admitted within 20 s", store.name, len(lims))
			}
			if d := time.Since(start); d < 180*time.Millisecond {
				t.Errorf("%s, %d limits: 20 calls at 10 ms apart admitted within %v", store.name, len(lims), d)
			}
		}
	}
}

// On a real clock, a call whose slot is free when it asks reports no wait
// (0, not the microseconds its own reservation took), on each store: what
// it reports goes into the attempt log's queued_ms and the wait metrics,
// which count only the calls that waited.
func TestWaitFreeSlotIsNoWait(t *testing.T) {
	fs := newFileStore(t)
	t.Cleanup(func() { fs.Close() })
	for _, s := range []Store{NewMemory(), fs} {
		l := &Limiter{Store: s, Limits: []Limit{{Name: "rpm", Requests: Rate{Limit: 6000, Per: time.Minute}}}}
		for i := range 3 {
			waited, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Second})
			if err != nil || waited != 0 {
				t.Fatalf("%T, call %d (slots 10 ms apart, calls further apart): waited %v, %v; want 0", s, i, waited, err)
			}
			done(0)
			time.Sleep(15 * time.Millisecond)
		}
	}
}
