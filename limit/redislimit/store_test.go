package redislimit

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/leaktest"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
)

func newStore(t *testing.T, srv *redistest.Server) *Store {
	t.Helper()
	s, err := New(srv.Client(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestScriptMatchesStep runs the reserve script and limit.Step on the same
// random inputs (TATs, clocks and deadlines up to the end of int64, rates
// up to a day, costs up to 1e9) and wants the same answer from both.
func TestScriptMatchesStep(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv)
	rc := srv.Client()
	rng := rand.New(rand.NewPCG(1, 2))
	anyTime := func() int64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return math.MaxInt64 - rng.Int64N(int64(48*time.Hour))
		}
		return int64(1.7e18) + rng.Int64N(int64(time.Hour))
	}
	type input struct {
		tat, now, nb int64
		r            limit.Rate
		cost, wait   int64
	}
	const sec = int64(time.Second)
	edges := []input{ // carries to the exact second, maxWait met exactly, the end of int64
		{1_700_000_000*sec + 600_000_000, 1_700_000_000 * sec, 0, limit.Rate{Limit: 5, Per: 2 * time.Second}, 1, sec},
		{1_700_000_000*sec + 999_999_999, 1_700_000_000 * sec, 0, limit.Rate{Limit: 1, Per: 1}, 1, sec},
		{1_700_000_005 * sec, 1_700_000_000 * sec, 0, limit.Rate{Limit: 1, Per: time.Second}, 1, 5 * sec},
		{1_700_000_005*sec + 1, 1_700_000_000 * sec, 0, limit.Rate{Limit: 1, Per: time.Second}, 1, 5 * sec},
		{0, 1_700_000_000*sec + 500_000_000, 1_700_000_003*sec + 500_000_000, limit.Rate{Limit: 2, Per: time.Second}, 1, 3 * sec},
		{math.MaxInt64 - 1, math.MaxInt64 - 1, 0, limit.Rate{Limit: 1, Per: time.Second}, 1, 0},
		{0, math.MaxInt64 - 5, 0, limit.Rate{Limit: 1, Per: time.Second}, 1, math.MaxInt64},
		{0, 1_700_000_000 * sec, 0, limit.Rate{Limit: 1, Per: 24 * time.Hour}, 1_000_000_000, 0},
		// token buckets: full, just empty, waiting for the next unit, a TAT never set
		{1_700_000_000 * sec, 1_700_000_000 * sec, 0, limit.Rate{Limit: 120, Per: time.Minute, Burst: 120}, 1, 0},
		{1_700_000_060 * sec, 1_700_000_000 * sec, 0, limit.Rate{Limit: 120, Per: time.Minute, Burst: 120}, 1, sec},
		{1_700_000_060*sec + 1, 1_700_000_000 * sec, 0, limit.Rate{Limit: 120, Per: time.Minute, Burst: 120}, 1, 500_000_000},
		{0, 1_700_000_000 * sec, 0, limit.Rate{Limit: 120, Per: time.Minute, Burst: 120}, 1, 0},
		{1_700_000_030 * sec, 1_700_000_000 * sec, 1_700_000_001 * sec, limit.Rate{Limit: 120, Per: time.Minute, Burst: 120}, 1, 2 * sec},
	}
	const cases = 3000
	for i := range cases + len(edges) {
		in := input{tat: anyTime(), now: anyTime(), nb: anyTime(), cost: rng.Int64N(1_000_000_001), wait: rng.Int64N(int64(2 * time.Minute))}
		if rng.IntN(3) == 0 {
			in.nb = 0
		}
		in.r = limit.Rate{Limit: rng.Int64N(1_000_001), Per: time.Duration(rng.Int64N(int64(24*time.Hour) + 1))}
		if rng.IntN(3) == 0 { // a token bucket (a learned limit's)
			in.r.Burst = rng.Int64N(2*in.r.Limit + 1)
		}
		if rng.IntN(10) == 0 {
			in.r = limit.Rate{}
		}
		if rng.IntN(10) == 0 {
			in.wait = math.MaxInt64
		}
		if i < len(edges) {
			in = edges[i]
		}
		tat, now, nb, r, cost, wait := in.tat, in.now, in.nb, in.r, in.cost, in.wait
		key := "parity"
		ts, tn := parts(tat)
		if err := rc.HSet(context.Background(), s.rkey(key), "ts", ts, "tn", tn).Err(); err != nil {
			t.Fatal(err)
		}
		s.now = func() time.Time { return time.Unix(0, now) }
		ok, at, got, err := s.step(key, r, cost, nb, wait)
		if err != nil {
			t.Fatal(err)
		}
		wantTAT, wantAt, wantOK := limit.Step(tat, now, nb, r, cost, time.Duration(wait))
		if ok != wantOK || at != wantAt || got != wantTAT {
			t.Fatalf("case %d: Step(tat %d, now %d, notBefore %d, %v, cost %d, wait %d):\n Lua (%d, %d, %v)\n Go  (%d, %d, %v)",
				i, tat, now, nb, r, cost, wait, got, at, ok, wantTAT, wantAt, wantOK)
		}
	}
}

// TestStore: cancel, settle and pause through Redis, on a clock the test
// sets; every key expires a minute after the later of its TAT and pause.
func TestStore(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv)
	t0 := time.Now().Add(time.Hour).Truncate(time.Second) // ahead of Redis's clock, so that nothing expires under the test
	now := t0
	s.now = func() time.Time { return now }
	r := limit.Rate{Limit: 120, Per: time.Minute}
	free := func() time.Duration {
		t.Helper()
		f, err := s.FreeAt("k")
		if err != nil {
			t.Fatal(err)
		}
		return f.Sub(t0)
	}
	for k := range 3 {
		at, ok, err := s.Reserve("k", r, 1, time.Time{}, time.Minute)
		if !ok || err != nil || at.Sub(t0) != time.Duration(k)*500*time.Millisecond {
			t.Fatalf("reservation %d: %v %v %v", k, at.Sub(t0), ok, err)
		}
	}
	s.Cancel("k", r, t0.Add(500*time.Millisecond), 1) // not the last
	if got := free(); got != 1500*time.Millisecond {
		t.Fatalf("TAT %v after cancelling a slot not last, want 1.5s", got)
	}
	s.Cancel("k", r, t0.Add(time.Second), 1)
	if got := free(); got != time.Second {
		t.Fatalf("TAT %v after cancelling the last slot, want 1s", got)
	}
	s.Settle("k", r, 4)
	if got := free(); got != 3*time.Second {
		t.Fatalf("TAT %v after settling 4 more, want 3s", got)
	}
	s.Settle("k", r, -100)
	if got := free(); got != 0 {
		t.Fatalf("TAT %v after giving back 100, want now (0)", got)
	}
	s.Pause("pause:p/m", t0.Add(time.Hour))
	s.Pause("pause:p/m", t0.Add(time.Minute))
	if p, _ := s.PausedUntil("pause:p/m"); !p.Equal(t0.Add(time.Hour)) {
		t.Fatalf("paused until %v, want 1h", p.Sub(t0))
	}
	if p, _ := s.PausedUntil("none"); !p.IsZero() {
		t.Fatalf("never paused: %v", p)
	}
	s.Pause("pause:q", t0.Add(time.Hour))
	if err := s.Resume("pause:q"); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.PausedUntil("pause:q"); !p.IsZero() {
		t.Fatalf("resumed, still paused until %v", p.Sub(t0))
	}
	s.Pause("pause:q", t0.Add(time.Minute))
	if p, _ := s.PausedUntil("pause:q"); !p.Equal(t0.Add(time.Minute)) {
		t.Fatalf("paused again until %v, want 1m", p.Sub(t0))
	}
	ctx := context.Background()
	exp, err := srv.Client().PExpireTime(ctx, s.rkey("pause:p/m")).Result()
	if err != nil || exp != time.Duration(t0.Add(time.Hour+time.Minute).UnixMilli())*time.Millisecond {
		t.Fatalf("pause expires at %v (%v), want its end + 1m", exp, err)
	}
	// A clock past the margin: the key is gone, and a new reservation starts afresh.
	s.Reserve("idle", r, 1, time.Time{}, 0)
	if exp, _ := srv.Client().PExpireTime(ctx, s.rkey("idle")).Result(); exp != time.Duration(t0.Add(500*time.Millisecond+time.Minute).UnixMilli())*time.Millisecond {
		t.Fatalf("bucket expires at %v, want its TAT + 1m", exp)
	}
}

// TestExactAcrossClients: two Stores (two hosts, as it were) on one Redis,
// 16 goroutines reserving at once on Redis's clock: every slot distinct
// and exactly one interval after the one before.
func TestExactAcrossClients(t *testing.T) {
	leaktest.Check(t)
	srv := redistest.Start(t)
	a, b := newStore(t, srv), newStore(t, srv)
	r := limit.Rate{Limit: 1, Per: time.Second}
	var mu sync.Mutex
	var ats []int64
	var wg sync.WaitGroup
	for g := range 16 {
		st := []*Store{a, b}[g%2]
		wg.Go(func() {
			for range 25 {
				at, ok, err := st.Reserve("limit:rps:all:requests", r, 1, time.Time{}, 24*time.Hour)
				if !ok || err != nil {
					t.Error(ok, err)
					return
				}
				mu.Lock()
				ats = append(ats, at.UnixNano())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(ats)
	if len(ats) != 400 {
		t.Fatalf("%d slots, want 400", len(ats))
	}
	for i := 1; i < len(ats); i++ {
		if d := ats[i] - ats[i-1]; d != int64(time.Second) {
			t.Fatalf("slots %d and %d are %v apart, want exactly 1s", i-1, i, time.Duration(d))
		}
	}
	if d := time.Until(time.Unix(0, ats[0])); d > time.Second || d < -5*time.Second {
		t.Fatalf("the first slot is %v from this host's clock: Redis TIME not used?", d)
	}
}

// TestLimiterOnRedis: the Limiter on this Store, 2 calls a second, on a
// real clock and socket. Whatever the scheduler does on a busy box: the
// slots Redis hands out are at least an interval (500 ms) apart, never
// sooner (exactly one apart when the calls queue); no call returns before
// its slot; each waits less than a second more than its interval; and a
// call that may not wait is refused while the next slot is ahead, or
// admitted no sooner than it.
func TestLimiterOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	st := newStore(t, srv)
	const key = "limit:rps:openai:requests"
	const iv = 500 * time.Millisecond
	l := &limit.Limiter{Store: st, Limits: []limit.Limit{{Name: "rps", Requests: limit.Rate{Limit: 2, Per: time.Second}}}}
	var slots []time.Time
	for i := range 3 {
		w, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: 5 * time.Second})
		back := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		free, err := st.FreeAt(key)
		if err != nil {
			t.Fatal(err)
		}
		slot := free.Add(-iv)
		if i > 0 && slot.Sub(slots[i-1]) < iv {
			t.Fatalf("slot %d is %v after the one before, want at least %v", i, slot.Sub(slots[i-1]), iv)
		}
		if back.Before(slot.Add(-5 * time.Millisecond)) { // Redis's clock is this host's
			t.Fatalf("call %d returned %v before its slot", i, slot.Sub(back))
		}
		if w > iv+time.Second {
			t.Fatalf("call %d waited %v, want at most its interval and a second", i, w)
		}
		slots = append(slots, slot)
	}
	free, _ := st.FreeAt(key)
	_, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m"})
	var e *limit.Error
	switch {
	case err == nil && time.Now().Before(free.Add(-5*time.Millisecond)):
		t.Fatalf("a call that may not wait was admitted %v before the next slot", free.Sub(time.Now()))
	case err != nil && (!errors.As(err, &e) || e.Key != key):
		t.Fatalf("a call that may not wait: %v, want refused by %s", err, key)
	}
}

// TestLearnScriptMatchesGo: the learn script against limit.LearnStep,
// and reservations and cancels in a learned bucket against limit.Step and
// the cancel rule, over random rates, uses and clocks: the same TAT and
// rate in Redis as in Go after every step.
func TestLearnScriptMatchesGo(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv)
	t0 := time.Now().Add(time.Hour).Truncate(time.Second)
	now := t0
	s.now = func() time.Time { return now }
	rng := rand.New(rand.NewPCG(3, 4))
	const key = "pause:openai/m"
	var tat int64
	var rate limit.Rate
	for i := range 600 {
		now = now.Add(time.Duration(rng.Int64N(int64(2 * time.Second))))
		n := now.UnixNano()
		if rng.IntN(3) == 0 && !rate.IsZero() { // a reservation in the learned bucket, a quarter of them cancelled
			at, ok, err := s.Reserve(key, rate, 1, time.Time{}, time.Minute)
			wantTAT, wantAt, wantOK := limit.Step(tat, n, 0, rate, 1, time.Minute)
			if err != nil || ok != wantOK || at.UnixNano() != wantAt {
				t.Fatalf("step %d: reserve in Redis at %v %v (%v), in Go at %v %v", i, at.Sub(t0), ok, err, time.Unix(0, wantAt).Sub(t0), wantOK)
			}
			if ok {
				tat = wantTAT
			}
			if ok && rng.IntN(4) == 0 {
				s.Cancel(key, rate, at, 1)
				iv := rate.Interval(1)
				tol := rate.Burst*iv - iv
				switch tat {
				case wantAt + iv:
					tat = wantAt
				case wantAt + tol + iv:
					tat = wantAt + tol
				}
			}
		} else { // an answer with a window
			size := 1 + rng.Int64N(500)
			r := limit.Rate{Limit: size, Per: time.Duration(1 + rng.Int64N(int64(2*time.Minute))), Burst: size}
			used := rng.Int64N(size + 1)
			if err := s.Learn(key, r, used); err != nil {
				t.Fatal(err)
			}
			tat, rate = limit.LearnStep(tat, n, rate, r, used), r
		}
		got, err := s.FreeAt(key)
		lr, err2 := s.Learned(key)
		r := lr.Rate
		if err != nil || err2 != nil || got.UnixNano() != tat || r != rate {
			t.Fatalf("step %d: Redis TAT %v rate %+v (%v %v), Go TAT %v rate %+v", i, got.Sub(t0), r, err, err2, time.Unix(0, tat).Sub(t0), rate)
		}
	}
}

// TestPaceScriptMatchesPaceStep: the pace script is limit.PaceStep in
// Lua, to the bit: 3,000 random answers (counted, too early, 429s with
// and without a ceiling or a Retry-After, at random times) leave Redis's
// pace and Go's the same after each.
func TestPaceScriptMatchesPaceStep(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv)
	t0 := time.Now().Add(time.Hour).Truncate(time.Second).Add(123_456_789) // keys expire by Redis's own clock
	now := t0
	s.now = func() time.Time { return now }
	rng := rand.New(rand.NewPCG(5, 6))
	const key = "pause:bedrock/claude"
	var want limit.Pace
	cuts, counted := 0, 0
	for i := range 3000 {
		now = now.Add(time.Duration(rng.Int64N(int64(700 * time.Millisecond))))
		ms := now.UnixMilli()
		e := limit.PaceEvent{Sent: ms - rng.Int64N(3000)}
		if rng.IntN(4) == 0 {
			e.Limited = true
			if rng.IntN(2) == 0 {
				e.RetryAfter = rng.Int64N(int64(5 * time.Second))
			}
			if rng.IntN(2) == 0 {
				e.Ceiling = rng.Float64() * 500
			}
		}
		got, err := s.Pace(key, e)
		next := limit.PaceStep(want, e, ms)
		if err != nil || got != next {
			t.Fatalf("step %d (%+v at %d, from %+v): Redis %+v (%v), Go %+v", i, e, ms, want, got, err, next)
		}
		if next.At != want.At {
			cuts++
		} else if next.OK != want.OK {
			counted++
		}
		want = next
		lr, err := s.Learned(key)
		if err != nil || lr.Pace != want {
			t.Fatalf("step %d: Learned reads %+v (%v), want %+v", i, lr.Pace, err, want)
		}
	}
	if cuts < 100 || counted < 500 {
		t.Fatalf("%d cuts and %d counted answers: the random walk did not exercise the law", cuts, counted)
	}
}
