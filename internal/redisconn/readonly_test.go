package redisconn_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	"github.com/sluice-llm/sluice/internal/redisconn"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/limit/redislimit"
)

// A node that answers READONLY (a demoted master, a replica) is Redis
// being unusable, never a provider failure: go-redis retries it within the
// bound, then the breaker store decides on local breakers, which start
// closed and count only the provider's own failures.
func TestReadOnlyIsNotAProviderFailure(t *testing.T) {
	master := redistest.Start(t)
	replica := redistest.StartWith(t, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
	c, err := redisconn.New(redisconn.Config{URL: replica.URL(), Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, err := redisstore.New(redisstore.Options{Client: c, Timeout: time.Second, Refresh: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := breaker.New("p", breaker.Settings{Failures: 2, Cool: time.Minute}, st)
	for range 3 {
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("a closed breaker refused: %v", err)
		}
		p.Done(breaker.Success, time.Millisecond)
	}
	p, _ := b.Allow()
	p.Done(breaker.Failure, time.Millisecond) // one provider failure: the write gets READONLY
	if !st.Degraded() {
		t.Fatal("READONLY did not move the store to its local breakers")
	}
	if rec, _ := st.Load("p"); rec.State != breaker.Closed || rec.Failures != 1 {
		t.Fatalf("local record %+v; want closed with the provider's one failure, nothing for READONLY", rec)
	}
	lim, _ := redislimit.New(c, redislimit.Options{Timeout: time.Second})
	_, _, err = lim.Reserve("k", limit.Rate{Limit: 10, Per: time.Second}, 1, time.Time{}, 0)
	if err == nil || !strings.Contains(err.Error(), "READONLY") {
		t.Fatalf("limiter on a replica: %v; want the READONLY error, for the limiter's local fallback", err)
	}
}
