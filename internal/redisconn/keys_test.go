package redisconn_test

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	idemredis "github.com/sluice-llm/sluice/idempotency/redisstore"
	"github.com/sluice-llm/sluice/internal/redisconn"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/limit/redislimit"
	"github.com/sluice-llm/sluice/spend/redisledger"
)

// The key scheme on a three-master cluster: every key of every store
// carries its record's name as its hash tag, and different records spread
// over all the masters; beside them, one registry of the breakers' names.
func TestKeysTaggedAndSpreadOverCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c, err := redisconn.New(redisconn.Config{Mode: redisconn.Cluster, Addrs: cl.Addrs()[:1], Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br, err := redisstore.New(redisstore.Options{Client: c, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	ledger := redisledger.New(c, redisledger.Options{Timeout: 2 * time.Second})
	lim, _ := redislimit.New(c, redislimit.Options{})
	answers := idemredis.New(c, idemredis.Options{})
	for i := range 12 {
		n := fmt.Sprint("n", i)
		if _, _, err := br.Apply(n, breaker.Settings{Failures: 9}, breaker.Event{Kind: breaker.EventFailure}); err != nil || br.Degraded() {
			t.Fatalf("breaker %s: %v", n, err)
		}
		if _, _, _, err := ledger.Reserve("budget:"+n, 0.1, 1, time.Minute); err != nil {
			t.Fatalf("ledger %s: %v", n, err)
		}
		if _, _, err := lim.Reserve("limit:"+n, limit.Rate{Limit: 10, Per: time.Second}, 1, time.Time{}, 0); err != nil {
			t.Fatalf("limiter %s: %v", n, err)
		}
		if _, err := answers.Begin("id-"+n, [32]byte{1}, time.Minute, time.Now()); err != nil {
			t.Fatalf("answers %s: %v", n, err)
		}
	}
	want := []*regexp.Regexp{
		regexp.MustCompile(`^sluice:breaker:\{n\d+\}$`),
		regexp.MustCompile(`^sluice:ledger:\{budget:n\d+\}$`),
		regexp.MustCompile(`^sluice:\{limit:n\d+\}$`),
		regexp.MustCompile(`^sluice:idem:\{id-n\d+\}:mark$`),
		regexp.MustCompile(`^sluice:breakers$`), // the registry the breakers are listed from
	}
	var mu sync.Mutex
	var keys []string
	perMaster := map[string]int{}
	err = c.(*redis.ClusterClient).ForEachMaster(context.Background(), func(ctx context.Context, m *redis.Client) error {
		ks, err := m.Keys(ctx, "*").Result()
		mu.Lock()
		defer mu.Unlock()
		keys = append(keys, ks...)
		perMaster[m.Options().Addr] = len(ks)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	if len(keys) != 49 {
		t.Fatalf("%d keys, want 49 (12 records of 4 stores, and the registry): %q", len(keys), keys)
	}
	for _, k := range keys {
		ok := false
		for _, re := range want {
			ok = ok || re.MatchString(k)
		}
		if !ok {
			t.Errorf("key %q is not in the scheme", k)
		}
	}
	if len(perMaster) != 3 {
		t.Fatalf("keys on %d masters, want 3", len(perMaster))
	}
	for m, n := range perMaster {
		if n == 0 {
			t.Errorf("no key on master %s: the records do not spread (%v)", m, perMaster)
		}
	}
}
