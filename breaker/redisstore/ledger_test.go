package redisstore

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestLedgerExactUnderConcurrencyAcrossStores(t *testing.T) {
	srv := startRedis(t)
	a, _ := newStore(t, srv, Options{})
	b, _ := newStore(t, srv, Options{})
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 64 {
		st := []*Store{a, b}[i%2]
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
	srv := startRedis(t)
	s, _ := newStore(t, srv, Options{})
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
	srv := startRedis(t)
	s, _ := newStore(t, srv, Options{Timeout: 100 * time.Millisecond})
	srv.kill()
	start := time.Now()
	_, _, ok, err := s.Reserve("k", 0.1, 1, time.Minute)
	if ok || err == nil {
		t.Fatal("a hold was taken with Redis down")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v, want about the 100ms timeout (+3s for a busy machine)", d)
	}
}
