// Package limittest holds the checks every shared limit.Store must pass,
// for the tests of each store.
package limittest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/limit"
)

// inFlightKey is the concurrency key of InFlightAcross's limit.
const inFlightKey = "limit:conc:openai:concurrent"

// InFlightAcross checks that a limit of 3 calls in flight holds across
// two Stores sharing one place (two handles on one state directory, two
// clients of one Redis), a Limiter on each: 10 callers, 5 on each, making
// 10 calls of 5 ms each; never more than 3 in flight at once, all 100
// served (a slot one Limiter gives back reaches the other's queue), and
// no slot left taken at the end.
func InFlightAcross(t *testing.T, a, b limit.Store) {
	t.Helper()
	lims := []limit.Limit{{Name: "conc", Concurrent: 3}}
	ls := []*limit.Limiter{{Store: a, Limits: lims}, {Store: b, Limits: lims}}
	var inFlight, most, served atomic.Int64
	var wg sync.WaitGroup
	for g := range 10 {
		l := ls[g%2]
		wg.Go(func() {
			for range 10 {
				_, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: 30 * time.Second})
				if err != nil {
					t.Error(err)
					return
				}
				n := inFlight.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(5 * time.Millisecond)
				inFlight.Add(-1)
				served.Add(1)
				done(0)
			}
		})
	}
	wg.Wait()
	if most.Load() != 3 || served.Load() != 100 {
		t.Errorf("%d in flight at most, %d calls served; want 3 and 100", most.Load(), served.Load())
	}
	if n, err := a.InFlight(inFlightKey); n != 0 || err != nil {
		t.Errorf("%d slots taken at the end (%v), want 0", n, err)
	}
}
