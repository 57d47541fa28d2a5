package redislimit

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
)

// TestPriorityAcrossHosts: two Limiters on two Stores of one Redis (two
// hosts). Batch calls on one flood a limit of ten a second; an
// Interactive call on the other, 300 ms later, takes the next slot or
// the one after (the Batch calls take none further than 25 ms ahead),
// while most Batch calls still wait. On a limit of one call in flight, an
// Interactive call waiting on one host gets the slot freed on the other
// before the Batch calls queued there first.
func TestPriorityAcrossHosts(t *testing.T) {
	srv := redistest.Start(t)
	rate := []limit.Limit{{Name: "rps", Requests: limit.Rate{Limit: 10, Per: time.Second}}}
	a := &limit.Limiter{Store: newStore(t, srv), Limits: rate}
	b := &limit.Limiter{Store: newStore(t, srv), Limits: rate}
	batch := hook.Caller{Priority: limit.Batch}
	var done atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, _, err := a.Wait(context.Background(), hook.Ask{Caller: batch, Provider: "openai", Model: "m", MaxWait: 10 * time.Second}); err != nil {
				t.Error(err)
			}
			done.Add(1)
		})
	}
	time.Sleep(300 * time.Millisecond)
	waited, _, err := b.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: 10 * time.Second})
	if n := done.Load(); err != nil || waited > 400*time.Millisecond || n > 8 {
		t.Errorf("the interactive call waited %v (%v) with %d batch calls admitted; want at most 2 slots (200 ms, 400 ms with a slow box), most batch calls still waiting", waited, err, n)
	}
	wg.Wait()

	conc := []limit.Limit{{Name: "conc", Concurrent: 1}}
	a = &limit.Limiter{Store: newStore(t, srv), Limits: conc}
	b = &limit.Limiter{Store: newStore(t, srv), Limits: conc}
	_, hold, err := a.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	for i, c := range []struct {
		l    *limit.Limiter
		who  hook.Caller
		name string
	}{{a, batch, "batch-1"}, {a, batch, "batch-2"}, {b, hook.Caller{}, "interactive"}} {
		wg.Go(func() {
			_, done, err := c.l.Wait(context.Background(), hook.Ask{Caller: c.who, Provider: "openai", Model: "m", MaxWait: 10 * time.Second})
			if err != nil {
				t.Error(c.name, err)
				return
			}
			mu.Lock()
			order = append(order, c.name)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			done(0)
		})
		time.Sleep(time.Duration(100*(i+1)) * time.Millisecond) // queued in this order
	}
	hold(0)
	wg.Wait()
	if len(order) != 3 || order[0] != "interactive" || order[1] != "batch-1" || order[2] != "batch-2" {
		t.Errorf("admitted %v, want the interactive call first, then the batch calls in their order", order)
	}
}
