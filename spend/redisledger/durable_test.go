package redisledger

import (
	"errors"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/redistest"
)

// With Replicas set, a hold no replica confirmed is refused: a failover
// could lose it and let the cap be crossed.
func TestHoldNotReplicatedIsRefused(t *testing.T) {
	srv := redistest.Start(t) // no replica
	l, _ := newLedger(t, srv, Options{Replicas: 1, Timeout: time.Second})
	if _, _, _, err := l.Reserve("daily", 0.10, 1.00, time.Minute); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("reserve without a replica: %v, want ErrNotReplicated", err)
	}
}

// A settlement Redis did not take is kept and sent again once Redis
// answers: the money is counted, not forgotten.
func TestSettlementKeptAndSentAgain(t *testing.T) {
	srv := redistest.Start(t)
	l, _ := newLedger(t, srv, Options{Timeout: 300 * time.Millisecond})
	h, _, ok, err := l.Reserve("daily", 0.10, 1.00, time.Hour)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	srv.Freeze()
	if err := l.Settle("daily", h, 0.07); err == nil {
		t.Fatal("settle with Redis frozen: no error")
	}
	srv.Thaw()
	if total, waiting, lost := l.Unconfirmed(); total != 1 || waiting != 1 || lost != 0 {
		t.Fatalf("unconfirmed %d, waiting %d, lost %d; want 1, 1, 0", total, waiting, lost)
	}
	if _, _, ok, err := l.Reserve("daily", 0.10, 1.00, time.Hour); !ok || err != nil {
		t.Fatal(ok, err)
	}
	spent, held, err := l.Read("daily")
	if err != nil || spent < 0.0699 || spent > 0.0701 || held < 0.0999 || held > 0.1001 {
		t.Fatalf("spent %v, held %v, %v; want the kept settlement (0.07) and the new hold (0.10)", spent, held, err)
	}
	if _, waiting, _ := l.Unconfirmed(); waiting != 0 {
		t.Fatalf("%d still waiting", waiting)
	}
}
