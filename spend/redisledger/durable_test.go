package redisledger

import (
	"context"
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

// An upgrade keeps a period's spend: the keys an older release wrote
// without a hash tag are renamed to this release's names.
func TestMigrateRenamesUntaggedKeys(t *testing.T) {
	srv := redistest.Start(t)
	l, c := newLedger(t, srv, Options{})
	ctx := context.Background()
	c.HSet(ctx, "sluice:ledger:budget:daily:all:2026-12-02", "spent", 700_000_000)
	c.HSet(ctx, "sluice:ledger:budget:other:all:2026-12-02", "spent", 1)
	c.HSet(ctx, "sluice:ledger:{budget:other:all:2026-12-02}", "spent", 2) // written by this release first
	n, err := Migrate(ctx, c, "")
	if n != 1 || err != nil {
		t.Fatalf("Migrate = %d, %v; want 1 renamed", n, err)
	}
	if spent, _, _ := l.Read("budget:daily:all:2026-12-02"); spent < 0.6999 || spent > 0.7001 {
		t.Fatalf("spent after the upgrade %v, want the 0.70 the old key held", spent)
	}
	if spent, _, _ := l.Read("budget:other:all:2026-12-02"); spent != 2e-9 {
		t.Fatalf("a key both releases wrote: spent %v, want this release's (2e-9)", spent)
	}
}
