//go:build unix

package redisstore

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/filestore"
	"github.com/sluice-llm/sluice/internal/redistest"
)

func TestNewRefusesBadURLs(t *testing.T) {
	for _, u := range []string{"", "http://127.0.0.1:6379", "redis://user:s3cret@127.0.0.1:bad/0", "redis://127.0.0.1:6379/notadb"} {
		s, err := New(Options{URL: u})
		if err == nil {
			s.Close()
			t.Errorf("New(%q): no error", u)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "redisstore: ") || strings.Contains(msg, "s3cret") {
			t.Errorf("New(%q): %q, want a redisstore: error without the password", u, msg)
		}
	}
}

func TestSharedBetweenStores(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := newStore(t, srv, Options{})
	b, _ := newStore(t, srv, Options{})
	s := breaker.Settings{Failures: 2, Cool: time.Hour}
	name := "openai/gpt-4o"
	if rec, err := b.Load(name); err != nil || !reflect.DeepEqual(rec, breaker.Record{}) {
		t.Fatalf("new breaker: %+v, %v; want closed", rec, err)
	}
	a.Apply(name, s, breaker.Event{Kind: breaker.EventFailure})
	_, rec, _ := a.Apply(name, s, breaker.Event{Kind: breaker.EventFailure})
	if rec.State != breaker.Open || rec.Reason != "failures" || rec.Transitions != 1 {
		t.Fatalf("after 2 failures: %+v, want open", rec)
	}
	if got, _ := a.Load(name); !reflect.DeepEqual(got, rec) {
		t.Fatalf("the store's own Load: %+v, want %+v", got, rec)
	}
	waitFor(t, time.Second, "the other store sees the breaker open", func() bool {
		got, _ := b.Load(name)
		return got.State == breaker.Open
	})
	got, _ := b.Load(name)
	// Each store reads the time itself; a busy machine separates the reads.
	if d := time.Duration(got.Until - rec.Until); d < -time.Second || d > time.Second {
		t.Errorf("the stores disagree on Until by %v", d)
	}
	list, err := b.List()
	if err != nil || list[name].State != breaker.Open {
		t.Fatalf("List = %v, %v; want %s open", list, err, name)
	}
	ttl := srv.Client().PTTL(context.Background(), "sluice:breaker:{"+name+"}").Val()
	if ttl < 24*time.Hour+59*time.Minute || ttl > 25*time.Hour {
		t.Errorf("key TTL %v, want the idle TTL (24h) plus the cool period (1h)", ttl)
	}
}

func TestPrefixNamespacesKeys(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := newStore(t, srv, Options{Prefix: "team-a:"})
	b, _ := newStore(t, srv, Options{Prefix: "team-b:"})
	a.Apply("p", breaker.Settings{Failures: 1}, breaker.Event{Kind: breaker.EventFailure})
	if _, rec, _ := b.Apply("p", breaker.Settings{}, breaker.Event{Kind: breaker.EventIgnored}); rec.State != breaker.Closed {
		t.Fatalf("another prefix sees %v, want closed", rec.State)
	}
	keys := srv.Client().Keys(context.Background(), "*").Val()
	sort.Strings(keys)
	if want := []string{"team-a:breaker:{p}", "team-a:breakers", "team-b:breaker:{p}", "team-b:breakers"}; !reflect.DeepEqual(keys, want) {
		t.Fatalf("keys %q, want %q", keys, want)
	}
}

func TestClosedFastPathNoRoundTrip(t *testing.T) {
	srv := redistest.Start(t)
	st, _ := newStore(t, srv, Options{Refresh: time.Hour})
	b := breaker.New("openai", breaker.Settings{Slow: breaker.Slow{Threshold: time.Minute}}, st)
	p, _ := b.Allow() // the first Load reads the record
	p.Done(breaker.Success, time.Millisecond)
	before := srv.CommandsProcessed()
	allocs := testing.AllocsPerRun(10000, func() {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p.Done(breaker.Success, time.Millisecond)
	})
	if n := srv.CommandsProcessed() - before; n != 1 { // the INFO that counts
		t.Errorf("Redis processed %d commands over 10000 closed Allow+Done, want none", n-1)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per closed Allow+Done, want 0", allocs)
	}
}

func TestRefreshSeesOtherStoresChange(t *testing.T) {
	srv := redistest.Start(t)
	a, _ := newStore(t, srv, Options{})
	b, _ := newStore(t, srv, Options{})
	s := breaker.Settings{Cool: time.Millisecond}
	var delays []time.Duration
	for range 8 {
		b.Load("p")
		time.Sleep(rand.N(250 * time.Millisecond)) // trip at any phase of b's refresh
		start := time.Now()
		a.Apply("p", s, breaker.Event{Kind: breaker.EventTrip})
		for {
			if r, _ := b.Load("p"); r.State != breaker.Closed {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		delays = append(delays, time.Since(start))
		a.Apply("p", s, breaker.Event{Kind: breaker.EventReset})
		waitFor(t, time.Second, "reset seen", func() bool { r, _ := b.Load("p"); return r.State == breaker.Closed })
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	t.Logf("a trip in one store seen by another after: min %v, median %v, max %v (Refresh 250ms)",
		delays[0], delays[len(delays)/2], delays[len(delays)-1])
	if max := delays[len(delays)-1]; max > 250*time.Millisecond+2*time.Second {
		t.Errorf("a change took %v to be seen, want within Refresh (+2s for a busy machine)", max)
	}
}

func TestUnreachableAtStart(t *testing.T) {
	srv := redistest.Start(t)
	srv.Kill()
	start := time.Now()
	st, lb := newStore(t, srv, Options{Timeout: 100 * time.Millisecond})
	if d := time.Since(start); d > decisionBound {
		t.Errorf("New took %v with Redis down, want within the timeout", d)
	}
	if !st.Degraded() || st.FallbacksTotal() != 1 || !strings.Contains(lb.String(), "redis unreachable") {
		t.Fatalf("Degraded %v, fallbacks %d, log %q; want degraded and said so", st.Degraded(), st.FallbacksTotal(), lb)
	}
	_, rec, err := st.Apply("p", breaker.Settings{Failures: 1}, breaker.Event{Kind: breaker.EventFailure})
	if err != nil || rec.State != breaker.Open {
		t.Fatalf("local breaker: %+v, %v; want open", rec, err)
	}
	srv.Start()
	waitFor(t, 3*time.Second, "back on Redis", func() bool { return !st.Degraded() })
	if !strings.Contains(lb.String(), "redis reachable again") {
		t.Fatalf("no log of the return: %q", lb)
	}
}

// load runs workers that call Allow and Done with a failure, then a
// success (both go to Redis), recording the slowest call, until stop.
type load struct {
	slowest atomic.Int64
	calls   atomic.Int64
	wg      sync.WaitGroup
	stop    chan struct{}
}

func startLoad(stores []*Store, workers int) *load {
	l := &load{stop: make(chan struct{})}
	for i := range workers {
		b := breaker.New("p", breaker.Settings{Failures: 1 << 30}, stores[i%len(stores)])
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				for _, o := range []breaker.Outcome{breaker.Failure, breaker.Success} {
					var p breaker.Permit
					var err error
					l.timed(func() { p, err = b.Allow() })
					if err == nil {
						l.timed(func() { p.Done(o, 0) })
					}
				}
				// The call itself: without a pause, eight workers spinning on
				// local breakers starve the very timers this test measures.
				time.Sleep(200 * time.Microsecond)
			}
		})
	}
	return l
}

func (l *load) timed(f func()) {
	start := time.Now()
	f()
	d := int64(time.Since(start))
	l.calls.Add(1)
	for {
		old := l.slowest.Load()
		if d <= old || l.slowest.CompareAndSwap(old, d) {
			return
		}
	}
}

// callsAfter waits until the workers made n more calls.
func (l *load) callsAfter(t *testing.T, n int64) {
	t.Helper()
	target := l.calls.Load() + n
	waitFor(t, 5*time.Second, fmt.Sprintf("%d more calls", n), func() bool { return l.calls.Load() >= target })
}

func (l *load) end() time.Duration {
	close(l.stop)
	l.wg.Wait()
	return time.Duration(l.slowest.Load())
}

// decisionBound is the slowest a decision may be: the Redis timeout and
// room for scheduling on a busy machine with the race detector. A
// decision that waited on Redis without its timeout would hang.
const decisionBound = 100*time.Millisecond + 2*time.Second

func TestRedisKilledMidLoad(t *testing.T) {
	srv := redistest.Start(t)
	a, la := newStore(t, srv, Options{Refresh: 50 * time.Millisecond, Timeout: 100 * time.Millisecond})
	b, lb := newStore(t, srv, Options{Refresh: 50 * time.Millisecond, Timeout: 100 * time.Millisecond})
	l := startLoad([]*Store{a, b}, 8)
	l.callsAfter(t, 200)
	srv.Kill()
	waitFor(t, 2*time.Second, "both stores degraded", func() bool { return a.Degraded() && b.Degraded() })
	l.callsAfter(t, 2000)
	slowest := l.end()
	t.Logf("slowest decision with Redis killed mid-load: %v", slowest)
	if slowest > decisionBound {
		t.Errorf("a decision took %v, want within the timeout (%v with slack)", slowest, decisionBound)
	}
	for i, st := range []*Store{a, b} {
		lg := []*logBuffer{la, lb}[i]
		if n := strings.Count(lg.String(), "redis unreachable"); n < 1 || uint64(n) != st.FallbacksTotal() {
			t.Errorf("store %d: %d switches to local breakers, logged %d times; want at least one, each logged once:\n%s",
				i, st.FallbacksTotal(), n, lg)
		}
	}
	// Local breakers still open during the outage.
	if _, rec, _ := a.Apply("local", breaker.Settings{Failures: 1}, breaker.Event{Kind: breaker.EventFailure}); rec.State != breaker.Open {
		t.Errorf("a local breaker did not open during the outage: %+v", rec)
	}
	srv.Start()
	back := time.Now()
	waitFor(t, 3*time.Second, "both stores back on Redis", func() bool { return !a.Degraded() && !b.Degraded() })
	t.Logf("back on shared state %v after Redis returned", time.Since(back))
	checkShared(t, a, b)
	if !strings.Contains(la.String(), "redis reachable again") {
		t.Errorf("no log of Redis's return:\n%s", la)
	}
}

func TestRedisFrozenMidLoad(t *testing.T) {
	srv := redistest.Start(t)
	a, la := newStore(t, srv, Options{Refresh: 50 * time.Millisecond, Timeout: 100 * time.Millisecond})
	b, _ := newStore(t, srv, Options{Refresh: 50 * time.Millisecond, Timeout: 100 * time.Millisecond})
	l := startLoad([]*Store{a, b}, 8)
	l.callsAfter(t, 200)
	srv.Freeze()
	waitFor(t, 2*time.Second, "both stores degraded", func() bool { return a.Degraded() && b.Degraded() })
	l.callsAfter(t, 2000)
	slowest := l.end()
	t.Logf("slowest decision with Redis frozen mid-load: %v", slowest)
	if slowest > decisionBound {
		t.Errorf("a decision took %v, want within the timeout (%v with slack)", slowest, decisionBound)
	}
	if n := strings.Count(la.String(), "redis unreachable"); n < 1 || uint64(n) != a.FallbacksTotal() {
		t.Errorf("fallbacks %d, log:\n%s", a.FallbacksTotal(), la)
	}
	srv.Thaw()
	back := time.Now()
	waitFor(t, 3*time.Second, "both stores back on Redis", func() bool { return !a.Degraded() && !b.Degraded() })
	t.Logf("back on shared state %v after Redis was thawed", time.Since(back))
	checkShared(t, a, b)
}

// checkShared shows a change made through a reaching b: the state is
// shared again.
func checkShared(t *testing.T, a, b *Store) {
	t.Helper()
	name := fmt.Sprintf("after-%d", time.Now().UnixNano())
	b.Load(name)
	if _, rec, _ := a.Apply(name, breaker.Settings{Cool: time.Hour}, breaker.Event{Kind: breaker.EventTrip}); rec.State != breaker.Open {
		t.Fatalf("trip: %+v", rec)
	}
	waitFor(t, time.Second, "a trip through one store seen by the other", func() bool {
		r, _ := b.Load(name)
		return r.State == breaker.Open
	})
	if a.Degraded() || b.Degraded() {
		t.Fatal("degraded again")
	}
}

func TestClockSkewDoesNotMatter(t *testing.T) {
	srv := redistest.Start(t)
	const skew = 30 * time.Second
	ahead := func() time.Time { return time.Now().Add(skew) }
	a, _ := newStore(t, srv, Options{})
	b, _ := newStore(t, srv, Options{now: ahead})
	const cool = 3 * time.Second
	s := breaker.Settings{Cool: cool, Lease: time.Minute}
	b.Load("p")
	_, opened, _ := a.Apply("p", s, breaker.Event{Kind: breaker.EventTrip})
	leftA := time.Duration(opened.Until - time.Now().UnixNano())
	waitFor(t, time.Second, "b sees the trip", func() bool { r, _ := b.Load("p"); return r.State == breaker.Open })
	seen, _ := b.Load("p")
	leftB := time.Duration(seen.Until - ahead().UnixNano())
	t.Logf("may close in %v by a's clock, then in %v by b's (30s ahead); the times differ by %v",
		leftA, leftB, time.Duration(seen.Until-opened.Until)-skew)
	// A busy machine separates the two reads of the time; a skewed clock
	// would separate them by 30s.
	if d := time.Duration(seen.Until-opened.Until) - skew; d < -time.Second || d > time.Second {
		t.Fatalf("the hosts disagree on when the breaker may close by %v", d)
	}
	// Before the cool ends by b's clock, b cannot take the probe; after, it
	// can. A 30s skew would let b take it at once.
	if _, r, _ := b.Apply("p", s, breaker.Event{Kind: breaker.Acquire, Token: 3}); r.State != breaker.Open {
		t.Fatalf("probe taken %v before the cool ended: %+v", time.Until(time.Unix(0, seen.Until)), r)
	}
	time.Sleep(time.Until(time.Unix(0, seen.Until).Add(-skew + 5*time.Millisecond)))
	if _, r, _ := b.Apply("p", s, breaker.Event{Kind: breaker.Acquire, Token: 3}); r.State != breaker.HalfOpen || r.Probe != 3 {
		t.Fatalf("probe refused 5ms after the cool ended by b's clock: %+v", r)
	}
}

func BenchmarkClosedAllowDone(b *testing.B) {
	srv := redistest.Start(b)
	red, _ := newStore(b, srv, Options{})
	file, err := filestore.Open(b.TempDir(), filestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	stores := []struct {
		name  string
		store breaker.Store
	}{{"memory", breaker.NewMemory()}, {"file", file}, {"redis", red}}
	for _, bc := range stores {
		br := breaker.New("openai", breaker.Settings{Slow: breaker.Slow{Threshold: 15 * time.Second}}, bc.store)
		allowDone := func() {
			p, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			p.Done(breaker.Success, time.Millisecond)
		}
		allowDone()
		b.Run(bc.name+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				allowDone()
			}
		})
		b.Run(bc.name+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					allowDone()
				}
			})
		})
	}
}

func BenchmarkFailure(b *testing.B) {
	srv := redistest.Start(b)
	red, _ := newStore(b, srv, Options{})
	s := breaker.Settings{Failures: 1 << 30}
	b.ReportAllocs()
	for b.Loop() {
		red.Apply("openai", s, breaker.Event{Kind: breaker.EventFailure})
	}
	if red.Degraded() {
		b.Fatal("degraded during the benchmark")
	}
}

// A name nobody asks about leaves the cache after the idle time, so that
// the refresh reads the breakers in use and not every name ever asked
// about; a name in use stays, and a forgotten one reads Redis again, its
// state intact.
func TestCacheForgetsUnusedNames(t *testing.T) {
	srv := redistest.Start(t)
	st, _ := newStore(t, srv, Options{Refresh: 5 * time.Millisecond, idle: 250 * time.Millisecond})
	set := breaker.Settings{Cool: time.Hour}
	if _, _, err := st.Apply("tripped", set, breaker.Event{Kind: breaker.EventTrip}); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		st.Load("model-" + strconv.Itoa(i))
	}
	st.Load("kept")
	first, _ := st.cache.Load("kept")
	cached := func() (n int, kept bool) {
		st.cache.Range(func(k, _ any) bool {
			n++
			kept = kept || k == "kept"
			return true
		})
		return n, kept
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // "kept" is in use all along
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
				st.Load("kept")
				time.Sleep(time.Millisecond)
			}
		}
	}()
	waitFor(t, 10*time.Second, "the unused names forgotten", func() bool { n, kept := cached(); return n == 1 && kept })
	close(stop)
	<-done
	if now, _ := st.cache.Load("kept"); now != first {
		t.Error("the name in use left the cache and was read from Redis again")
	}
	before := srv.CommandsProcessed()
	time.Sleep(50 * time.Millisecond) // some ten refreshes
	if n := srv.CommandsProcessed() - before; n > 100 {
		t.Errorf("Redis processed %d commands in 50ms of refreshes of one name, want a few a refresh", n)
	}
	if rec, err := st.Load("tripped"); err != nil || rec.State != breaker.Open {
		t.Errorf("a forgotten open breaker reads %+v, %v; want open", rec, err)
	}
}
