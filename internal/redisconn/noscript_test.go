package redisconn_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	idemredis "github.com/sluice-llm/sluice/idempotency/redisstore"
	"github.com/sluice-llm/sluice/internal/redisconn"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/limit/redislimit"
	"github.com/sluice-llm/sluice/spend/redisledger"
)

// A server that has forgotten the scripts (a promoted replica, a restart,
// SCRIPT FLUSH) answers EVALSHA with NOSCRIPT: every store sends the
// script again and goes on, on the shared state, never on a fallback.
func TestStoresSurviveNoScript(t *testing.T) {
	srv := redistest.Start(t)
	c, err := redisconn.New(redisconn.Config{URL: srv.URL(), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br, err := redisstore.New(redisstore.Options{Client: c, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	ledger := redisledger.New(c, redisledger.Options{Timeout: time.Second})
	lim, _ := redislimit.New(c, redislimit.Options{})
	answers := idemredis.New(c, idemredis.Options{})
	rate := limit.Rate{Limit: 1000, Per: time.Minute, Burst: 1000}
	run := func(round int) {
		t.Helper()
		if _, rec, err := br.Apply("p", breaker.Settings{Failures: 100}, breaker.Event{Kind: breaker.EventFailure}); err != nil || rec.Failures != round || br.Degraded() {
			t.Fatalf("round %d: breaker %+v, %v, degraded %v; want %d failures in Redis", round, rec, err, br.Degraded(), round)
		}
		if _, _, ok, err := ledger.Reserve("b", 0.10, 1.00, time.Minute); !ok || err != nil {
			t.Fatalf("round %d: reserve %v, %v", round, ok, err)
		}
		if _, ok, err := lim.Reserve("limit:rpm:p:requests", rate, 1, time.Time{}, 0); !ok || err != nil {
			t.Fatalf("round %d: limiter %v, %v", round, ok, err)
		}
		if _, err := answers.Begin("id", [32]byte{byte(round)}, time.Minute, time.Now()); err != nil {
			t.Fatalf("round %d: answers %v", round, err)
		}
	}
	run(1)
	if err := srv.Client().ScriptFlush(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	run(2)
	if _, held, _ := ledger.Read("b"); held < 0.199 || held > 0.201 {
		t.Fatalf("held %v, want the two holds (0.20)", held)
	}
}
