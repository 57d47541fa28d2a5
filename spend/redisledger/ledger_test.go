package redisledger

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/internal/redistest"
)

func TestLedgerExactUnderConcurrencyAcrossStores(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := newLedger(t, srv, Options{})
	b, _ := newLedger(t, srv, Options{})
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		st := []*Ledger{a, b}[i%2]
		wg.Go(func() {
			h, _, ok, err := st.Reserve("daily", 0.10, 1.00, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			if ok {
				admitted.Add(1)
				if err := st.Settle("daily", h, 0.10); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 10 {
		t.Fatalf("%d holds of $0.10 admitted under $1.00 across two stores, want exactly 10", admitted.Load())
	}
	spent, held, err := a.Read("daily")
	if err != nil || math.Abs(spent-1.0) > 1e-9 || held != 0 {
		t.Fatalf("spent %v held %v (%v), want 1.00 and 0", spent, held, err)
	}
}

func TestLedgerSettleFreesAndReclaims(t *testing.T) {
	srv := redistest.Start(t)
	s, _ := newLedger(t, srv, Options{})
	h, left, ok, err := s.Reserve("k", 0.20, 0.30, time.Minute)
	if !ok || err != nil || math.Abs(left-0.10) > 1e-9 {
		t.Fatalf("first hold: ok %v left %v err %v", ok, left, err)
	}
	if _, _, ok, _ := s.Reserve("k", 0.20, 0.30, time.Minute); ok {
		t.Fatal("a second hold crossed the cap")
	}
	s.Settle("k", h, 0.05) // cheaper than held: the rest is free again
	if _, _, ok, _ := s.Reserve("k", 0.20, 0.30, 150*time.Millisecond); !ok {
		t.Fatal("the freed reservation was not usable again")
	}
	waitFor(t, 2*time.Second, "the dead hold is reclaimed", func() bool {
		_, held, _ := s.Read("k")
		return held == 0
	})
	spent, _, _ := s.Read("k")
	if math.Abs(spent-0.05) > 1e-9 {
		t.Errorf("spent %v, want 0.05", spent)
	}
	// A settle after the reclaim still counts the money.
	s.Settle("k", h, 0.01)
	if spent, held, _ := s.Read("k"); math.Abs(spent-0.06) > 1e-9 || held != 0 {
		t.Errorf("spent %v held %v, want 0.06 and 0", spent, held)
	}
}

func TestLedgerFailsWhenRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	s, _ := newLedger(t, srv, Options{Timeout: 100 * time.Millisecond})
	srv.Kill()
	start := time.Now()
	_, _, ok, err := s.Reserve("k", 0.1, 1, time.Minute)
	if ok || err == nil {
		t.Fatal("a hold was taken with Redis down")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v, want about the 100ms timeout (+3s for a busy machine)", d)
	}
}

// newLedger returns a ledger of srv over a client of its own, bounded by
// opts.Timeout (5s when zero: a busy machine), and that client.
func newLedger(t *testing.T, srv *redistest.Server, opts Options) (*Ledger, *redis.Client) {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	ro, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = opts.Timeout, opts.Timeout, opts.Timeout
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = -1
	c := redis.NewClient(ro)
	t.Cleanup(func() { c.Close() })
	return New(c, opts), c
}

// waitFor polls cond every millisecond until it holds or d has passed.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
}
