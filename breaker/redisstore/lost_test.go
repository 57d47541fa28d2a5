package redisstore

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// A record Redis lost (a failover to a replica that never received the
// last writes, here FLUSHALL) is not forgotten silently: the store says in
// the log which breaker went back and from what, once, and counts again
// from what Redis has. A breaker with nothing to lose (closed, no
// failure) is not named.
func TestRecordLostIsLogged(t *testing.T) {
	srv := redistest.Start(t)
	st, lb := newStore(t, srv, Options{Refresh: 20 * time.Millisecond})
	st.Load("quiet")
	if _, r, err := st.Apply("p", breaker.Settings{Cool: time.Hour}, breaker.Event{Kind: breaker.EventTrip}); err != nil || r.State != breaker.Open {
		t.Fatalf("trip: %v, %v", r.State, err)
	}
	time.Sleep(100 * time.Millisecond) // a few refreshes: nothing went back yet
	if strings.Contains(lb.String(), "went back") {
		t.Fatalf("a record said lost while Redis still had it:\n%s", lb.String())
	}
	if err := srv.Client().FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 2*time.Second, "the loss logged", func() bool { return strings.Contains(lb.String(), "went back") })
	waitFor(t, 2*time.Second, "the breaker closed, as Redis has it", func() bool { r, _ := st.Load("p"); return r.State == breaker.Closed })
	time.Sleep(100 * time.Millisecond)
	log := lb.String()
	if n := strings.Count(log, "went back"); n != 1 || !strings.Contains(log, "breaker=p ") || !strings.Contains(log, "was=open") {
		t.Fatalf("want one line naming breaker p, was open; got %d:\n%s", n, log)
	}
}
