package redisstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// commandCalls returns the calls of each command Redis counted since the
// last CONFIG RESETSTAT, from INFO commandstats.
func commandCalls(t *testing.T, srv *redistest.Server) map[string]int {
	t.Helper()
	info, err := srv.Client().Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]int)
	for line := range strings.SplitSeq(info, "\r\n") {
		name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls=")
		if !ok {
			continue
		}
		var n int
		fmt.Sscanf(rest, "%d", &n)
		out[name] = n
	}
	return out
}

// fill writes n keys that are not Sluice's, as a busy shared database holds.
func fill(t *testing.T, srv *redistest.Server, n int) {
	t.Helper()
	ctx := context.Background()
	for i := 0; i < n; i += 1000 {
		args := make([]any, 0, 2000)
		for j := i; j < min(n, i+1000); j++ {
			args = append(args, fmt.Sprintf("other:%d", j), "x")
		}
		if err := srv.Client().MSet(ctx, args...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListReadsRegistryNotKeyspace(t *testing.T) {
	srv := redistest.Start(t)
	fill(t, srv, 20000)
	a, _ := newStore(t, srv, Options{})
	set := breaker.Settings{Failures: 1, Cool: time.Hour}
	for _, n := range []string{"openai", "anthropic", "bedrock/claude"} {
		if _, _, err := a.Apply(n, set, breaker.Event{Kind: breaker.EventFailure}); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := newStore(t, srv, Options{Refresh: time.Hour}) // knows no name of its own
	srv.Client().ConfigResetStat(context.Background())
	for range 10 {
		list, err := b.List()
		if err != nil || len(list) != 3 || list["bedrock/claude"].State != breaker.Open {
			t.Fatalf("List = %v, %v; want the 3 breakers, open", list, err)
		}
	}
	calls := commandCalls(t, srv)
	if calls["scan"] > 0 || calls["keys"] > 0 {
		t.Fatalf("10 Lists ran SCAN %d times, KEYS %d times, over a database of 20000 other keys; want neither", calls["scan"], calls["keys"])
	}
	total := 0
	for name, n := range calls {
		if name != "info" && name != "config|resetstat" {
			total += n
		}
	}
	// Each List: one pipeline on the registry (ZREMRANGEBYSCORE, ZRANGE)
	// and one of TIME and an HMGET per breaker; and once, the connection's
	// HELLO.
	if total > 10*(2+1+3)+1 {
		t.Errorf("10 Lists of 3 breakers cost %d commands (%v), want at most %d", total, calls, 10*6+1)
	}
}

func TestRegistryForgetsGoneBreakers(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a, _ := newStore(t, srv, Options{IdleTTL: 300 * time.Millisecond})
	b, _ := newStore(t, srv, Options{Refresh: time.Hour})
	set := breaker.Settings{Failures: 5}
	for _, n := range []string{"expires", "evicted"} {
		if _, _, err := a.Apply(n, set, breaker.Event{Kind: breaker.EventFailure}); err != nil {
			t.Fatal(err)
		}
	}
	reg := b.registry()
	srv.Client().ZAdd(ctx, reg, redis.Z{Score: 1, Member: "ghost"}) // kept until 1970: its time has passed
	srv.Client().Del(ctx, b.key("evicted"))                         // as maxmemory evicts it, or an operator deletes it
	list, err := b.List()
	if _, ok := list["expires"]; err != nil || len(list) != 1 || !ok {
		t.Fatalf("List = %v, %v; want only the breaker whose key exists", list, err)
	}
	if got := srv.Client().ZRange(ctx, reg, 0, -1).Val(); len(got) != 1 || got[0] != "expires" {
		t.Fatalf("registry %q after a List, want only [expires]: a member whose time passed or whose key is gone leaves it", got)
	}
	waitFor(t, 5*time.Second, "the key expires after its idle TTL", func() bool {
		return srv.Client().Exists(ctx, b.key("expires")).Val() == 0
	})
	if list, err := b.List(); err != nil || len(list) != 0 {
		t.Fatalf("List = %v, %v after the key expired; want none", list, err)
	}
	if n := srv.Client().ZCard(ctx, reg).Val(); n != 0 {
		t.Fatalf("registry holds %d members after its breakers expired, want 0", n)
	}
	// Written again, the breaker is in the registry again: a new record
	// (a new epoch) is added whatever this store added before.
	if _, _, err := a.Apply("expires", set, breaker.Event{Kind: breaker.EventFailure}); err != nil {
		t.Fatal(err)
	}
	if list, _ := b.List(); list["expires"].Failures != 1 {
		t.Fatalf("List = %v after the breaker was written again; want it, 1 failure", list)
	}
}

func TestRegistryWrittenOncePerPeriod(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	a, _ := newStore(t, srv, Options{register: 300 * time.Millisecond})
	set := breaker.Settings{Failures: 1000}
	fail := func() {
		t.Helper()
		if _, _, err := a.Apply("openai", set, breaker.Event{Kind: breaker.EventFailure}); err != nil {
			t.Fatal(err)
		}
	}
	fail()
	srv.Client().ConfigResetStat(ctx)
	for range 20 {
		fail()
	}
	if n := commandCalls(t, srv)["zadd"]; n != 0 {
		t.Errorf("20 failures of a registered breaker wrote the registry %d times, want none within the period", n)
	}
	srv.Client().Del(ctx, a.registry()) // lost in a failover
	time.Sleep(350 * time.Millisecond)
	fail()
	if got := srv.Client().ZRange(ctx, a.registry(), 0, -1).Val(); len(got) != 1 || got[0] != "openai" {
		t.Fatalf("registry %q a period after it was lost, want [openai] again", got)
	}
	ttl := srv.Client().PTTL(ctx, a.key("openai")).Val()
	score := srv.Client().ZScore(ctx, a.registry(), "openai").Val()
	tm := srv.Client().Time(ctx).Val()
	if left := time.Duration(score)*time.Millisecond - time.Duration(tm.UnixNano()); left < ttl {
		t.Errorf("registry keeps the name %v more, its key lives %v: the member would leave first", left, ttl)
	}
}

func TestPruneSparesMembersAddedAgain(t *testing.T) {
	srv := redistest.Start(t)
	st, _ := newStore(t, srv, Options{})
	ctx := context.Background()
	srv.Client().ZAdd(ctx, st.registry(), redis.Z{Score: 2000, Member: "readded"}, redis.Z{Score: 1000, Member: "gone"})
	// Both were read at 1000 with their keys missing; "readded" was
	// written and added again since.
	st.prune([]any{"readded", "1000", "gone", "1000"})
	if got := srv.Client().ZRange(ctx, st.registry(), 0, -1).Val(); len(got) != 1 || got[0] != "readded" {
		t.Fatalf("registry %q after the prune, want [readded]", got)
	}
}

// After an outage (a failover may have lost the registry's last
// additions), a breaker's next change adds it again at once, not a
// registerEvery later.
func TestRegistryAddedAgainAfterOutage(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	st, _ := newStore(t, srv, Options{Timeout: 100 * time.Millisecond, Refresh: 10 * time.Millisecond})
	set := breaker.Settings{Failures: 1000}
	if _, _, err := st.Apply("openai", set, breaker.Event{Kind: breaker.EventFailure}); err != nil {
		t.Fatal(err)
	}
	srv.Client().Del(ctx, st.registry()) // the promoted replica never had it
	srv.Freeze()
	waitFor(t, 5*time.Second, "the store falls back to local breakers", st.Degraded)
	srv.Thaw()
	waitFor(t, 5*time.Second, "the store is back on Redis", func() bool { return !st.Degraded() })
	if _, _, err := st.Apply("openai", set, breaker.Event{Kind: breaker.EventFailure}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Client().ZRange(ctx, st.registry(), 0, -1).Val(); len(got) != 1 || got[0] != "openai" {
		t.Fatalf("registry %q after the outage and a change, want [openai]", got)
	}
}

// On a cluster, breakers spread over the masters are all listed from the
// registry (one key, on one node), and one whose key is gone leaves it.
func TestRegistryOnCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	ctx := context.Background()
	open := func() *Store {
		st, err := New(Options{Client: c.ClusterClient(t), Timeout: testTimeout})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, b := open(), open()
	cc := c.ClusterClient(t)
	nodes := make(map[string]bool)
	var names []string
	for i := range 12 {
		n := fmt.Sprintf("provider-%d/model", i)
		names = append(names, n)
		if _, _, err := a.Apply(n, breaker.Settings{Failures: 1, Cool: time.Hour}, breaker.Event{Kind: breaker.EventFailure}); err != nil {
			t.Fatal(err)
		}
		m, err := cc.MasterForKey(ctx, a.key(n))
		if err != nil {
			t.Fatal(err)
		}
		nodes[m.Options().Addr] = true
	}
	if len(nodes) < 2 {
		t.Fatalf("12 breakers on %d master(s), want them spread", len(nodes))
	}
	cc.Del(ctx, a.key(names[0]))
	list, err := b.List()
	if err != nil || len(list) != len(names)-1 || list[names[1]].State != breaker.Open {
		t.Fatalf("List on the cluster = %v, %v; want the %d breakers whose key exists, open", list, err, len(names)-1)
	}
	if n := cc.ZCard(ctx, b.registry()).Val(); n != int64(len(names)-1) {
		t.Errorf("registry holds %d names, want %d", n, len(names)-1)
	}
}

// A registry Redis refuses does not fail the change: the record is
// written, one warning is logged for the streak, and a change after it is
// fixed adds the breaker.
func TestRegistryFailureIsNotAnOutage(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	st, lb := newStore(t, srv, Options{Refresh: 20 * time.Millisecond})
	srv.Client().Set(ctx, st.registry(), "not a sorted set", 0) // every ZSCORE answers WRONGTYPE
	set := breaker.Settings{Failures: 1000}
	for i := range 20 {
		_, rec, err := st.Apply("openai", set, breaker.Event{Kind: breaker.EventFailure})
		if err != nil || rec.Failures != i+1 {
			t.Fatalf("failure %d: %+v, %v; want it counted", i+1, rec, err)
		}
	}
	if st.Degraded() {
		t.Fatal("the store fell back to local breakers over the registry")
	}
	if n := strings.Count(lb.String(), "could not be added to the registry"); n != 1 {
		t.Errorf("%d warnings over 20 failed additions, want 1:\n%s", n, lb.String())
	}
	srv.Client().Del(ctx, st.registry())
	time.Sleep(30 * time.Millisecond)
	st.Apply("openai", set, breaker.Event{Kind: breaker.EventFailure})
	if got := srv.Client().ZRange(ctx, st.registry(), 0, -1).Val(); len(got) != 1 || got[0] != "openai" {
		t.Fatalf("registry %q once Redis takes it again, want [openai]", got)
	}
}

// Where nothing lists the breakers (a library's store), adding one drops
// the members whose time has passed: the registry stays bounded.
func TestRegistryBoundedWithoutList(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	st, _ := newStore(t, srv, Options{})
	for i := range 100 { // breakers whose keys expired long ago
		srv.Client().ZAdd(ctx, st.registry(), redis.Z{Score: float64(1000 + i), Member: fmt.Sprintf("old-%d", i)})
	}
	if _, _, err := st.Apply("openai", breaker.Settings{}, breaker.Event{Kind: breaker.EventFailure}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Client().ZRange(ctx, st.registry(), 0, -1).Val(); len(got) != 1 || got[0] != "openai" {
		t.Fatalf("registry holds %d members after an addition, want only [openai]", len(got))
	}
}
