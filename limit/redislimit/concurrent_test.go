package redislimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/leaktest"
	"github.com/sluice-llm/sluice/internal/limittest"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
)

const concKey = "limit:conc:openai:concurrent"

var concLimits = []limit.Limit{{Name: "conc", Concurrent: 3}}

// TestAcquireLeases: the acquire script on a clock the test sets. Three
// leases of 1 s fill a limit of 3; a 4th is refused; a release frees one;
// once the others' leases are past, they are dropped, and the key expires
// with its last lease.
func TestAcquireLeases(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv)
	t0 := time.Now().Add(time.Hour).Truncate(time.Second) // ahead of Redis's clock, so that nothing expires under the test
	now := t0
	s.now = func() time.Time { return now }
	var tokens []uint64
	for i := range 3 {
		token, ok, err := s.Acquire(concKey, 3, time.Second)
		if !ok || err != nil {
			t.Fatalf("lease %d: %v %v", i, ok, err)
		}
		tokens = append(tokens, token)
	}
	if _, ok, _ := s.Acquire(concKey, 3, time.Second); ok {
		t.Fatal("a 4th lease under 3")
	}
	if err := s.Release(concKey, tokens[0]); err != nil {
		t.Fatal(err)
	}
	if n, _ := s.InFlight(concKey); n != 2 {
		t.Fatalf("%d leases after a release, want 2", n)
	}
	now = t0.Add(500 * time.Millisecond)
	if _, ok, _ := s.Acquire(concKey, 3, time.Second); !ok {
		t.Fatal("the released slot is not free")
	}
	ctx := context.Background()
	if exp, _ := srv.Client().PExpireTime(ctx, s.rkey(concKey)).Result(); exp != time.Duration(t0.Add(1500*time.Millisecond).UnixMilli())*time.Millisecond {
		t.Fatalf("key expires at %v, want with its last lease (t0+1.5s)", exp)
	}
	now = t0.Add(time.Second) // the first two leases end: dropped by the next acquire
	for i := range 2 {
		if _, ok, _ := s.Acquire(concKey, 3, time.Second); !ok {
			t.Fatalf("slot %d of the expired leases is not free", i)
		}
	}
	if n, _ := srv.Client().ZCard(ctx, s.rkey(concKey)).Result(); n != 3 {
		t.Fatalf("%d members in the sorted set, want the 2 expired ones dropped (3)", n)
	}
	if _, ok, _ := s.Acquire(concKey, 3, time.Second); ok {
		t.Fatal("a 4th lease under 3 after the expiries")
	}
}

// TestConcurrentAcrossClients: two Stores (two hosts, as it were) on one
// Redis share a limit of calls in flight.
func TestConcurrentAcrossClients(t *testing.T) {
	leaktest.Check(t)
	srv := redistest.Start(t)
	limittest.InFlightAcross(t, newStore(t, srv), newStore(t, srv))
}

// TestConcurrentQueueOnRedis: 10 calls arriving 25 ms apart in one
// process under 3 in flight, each holding 150 ms, on a real clock and
// socket. It asserts the invariant, whatever the scheduler does on a busy
// box: every call is admitted, never more than 3 are in flight, a done
// called twice releases once (no lease is left), and a call that may not
// wait is either refused by the concurrency key or admitted (and given
// back). The order of admission is logged: that the queue serves its
// calls in their order of arrival is asserted on a fake clock, where
// arrival is exact (limit's TestConcurrentQueue, TestFileConcurrentQueue);
// here a call started 25 ms after another may reach the queue first.
func TestConcurrentQueueOnRedis(t *testing.T) {
	leaktest.Check(t)
	srv := redistest.Start(t)
	l := &limit.Limiter{Store: newStore(t, srv), Limits: concLimits}
	l.Store.InFlight(concKey) // connected, before the clock starts
	var mu sync.Mutex
	var order []int
	var inFlight, most atomic.Int64
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			_, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: 30 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(150 * time.Millisecond)
			inFlight.Add(-1)
			done(0)
			done(0)
		})
		time.Sleep(25 * time.Millisecond) // arrival order, as far as the scheduler keeps it
	}
	_, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m"})
	var e *limit.Error
	switch {
	case err == nil:
		t.Log("the call that may not wait found a slot free: the box is slow")
		done(0)
	case !errors.As(err, &e) || e.Key != concKey:
		t.Errorf("a call that may not wait: %v, want admitted or refused by %s", err, concKey)
	}
	wg.Wait()
	if len(order) != 10 || most.Load() > 3 || most.Load() < 1 {
		t.Fatalf("%d admitted, %d in flight at most; want 10, and 1 to 3", len(order), most.Load())
	}
	if n, _ := l.Store.InFlight(concKey); n != 0 {
		t.Fatalf("%d leases after every call ended (each done called twice), want 0", n)
	}
	t.Logf("admitted in the order %v, at most %d in flight", order, most.Load())
}
