package keypool

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
)

// testPool is a pool of the keys named by weight, over a Memory store.
func testPool(t *testing.T, weights ...int) *pool {
	t.Helper()
	return testPoolOn(t, limit.NewMemory(), weights...)
}

// testPoolOn is testPool over the store st.
func testPoolOn(t *testing.T, st limit.Store, weights ...int) *pool {
	t.Helper()
	p := config.Provider{Kind: "openai"}
	env := map[string]string{}
	for i, w := range weights {
		name := "K" + string(rune('A'+i))
		env[name] = "sk-" + name
		p.APIKeys = append(p.APIKeys, config.PoolKey{Env: name, Weight: w})
	}
	kp, err := newPool("openai", p, func(k string) string { return env[k] }, st, Events{})
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// takes returns the keys (by letter) of n takes in a row.
func takes(t *testing.T, p *pool, n int) string {
	t.Helper()
	var b strings.Builder
	for range n {
		i, err := p.take(context.Background(), "m", limit.Interactive, 0)
		if err != nil {
			t.Fatalf("take: %v", err)
		}
		b.WriteByte(byte('A' + i))
	}
	return b.String()
}

// Weighted round robin: each key takes its weight's share, spread out.
func TestKeyPoolWeights(t *testing.T) {
	for _, tt := range []struct {
		weights []int
		want    string
	}{
		{[]int{1, 1}, "ABABAB"},
		{[]int{2, 1}, "ABAABA"},
		{[]int{5, 1, 1}, "AABACAAAABACAA"},
	} {
		if got := takes(t, testPool(t, tt.weights...), len(tt.want)); got != tt.want {
			t.Errorf("weights %v: %s, want %s", tt.weights, got, tt.want)
		}
	}
}

// A paused key is skipped until its pause ends, an out key until its
// window resets; the others share the calls meanwhile.
func TestKeyPoolSkipsPausedAndOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1, 1, 1)
		if !p.learn(0, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: false, Header: http.Header{}, RetryAfter: 2 * time.Second}) { // A paused 2 s
			t.Fatal("learn says no other key is ready")
		}
		p.learn(1, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: true, Header: http.Header{}, RetryAfter: 5 * time.Second}) // B out 5 s
		if got := takes(t, p, 3); got != "CCC" {
			t.Errorf("with A paused and B out: %s, want CCC", got)
		}
		time.Sleep(2 * time.Second)
		if got := takes(t, p, 4); strings.Contains(got, "B") || !strings.Contains(got, "A") {
			t.Errorf("after A's pause: %s, want A and C only", got)
		}
		time.Sleep(3 * time.Second)
		// A's 429 also taught its pace, one call per 2 s: A takes one of
		// six calls at once, B and C share the rest.
		if got := takes(t, p, 6); got != "ABCBCB" {
			t.Errorf("after B's window: %s, want ABCBCB", got)
		}
	})
}

// With every key paused a take waits for the first to be ready, exactly,
// within maxWait; beyond it, it is refused at once with the wait.
func TestKeyPoolQueuesWhilePaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1, 1)
		if p.learn(0, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: false, Header: http.Header{}, RetryAfter: 3 * time.Second}) != true {
			t.Fatal("B should be ready")
		}
		if p.learn(1, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: false, Header: http.Header{"Retry-After": {"1"}}, RetryAfter: time.Second}) {
			t.Fatal("learn says a key is ready with both paused")
		}
		_, err := p.take(context.Background(), "m", limit.Interactive, 500*time.Millisecond)
		var le *limit.Error
		if !errors.As(err, &le) || le.Wait != time.Second {
			t.Fatalf("take with 500ms to wait: %v, want refused with 1s", err)
		}
		start := time.Now()
		i, err := p.take(context.Background(), "m", limit.Interactive, 10*time.Second)
		if err != nil || i != 1 || time.Since(start) != time.Second {
			t.Errorf("take: key %d, %v after %v; want B after exactly 1s", i, err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		p.learn(1, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: false, Header: http.Header{}, RetryAfter: time.Minute})
		if _, err := p.take(ctx, "m", limit.Interactive, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("take whose context ends: %v", err)
		}
	})
}

// Every key out: a take fails at once with the quota error, which says
// when the first window resets when a key's 429 said so; a reset brings a
// key back.
func TestKeyPoolAllOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1, 1)
		p.learn(0, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: true, Header: http.Header{}, RetryAfter: 0})             // until reset
		p.learn(1, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: true, Header: http.Header{}, RetryAfter: 2 * time.Hour}) // its window
		start := time.Now()
		_, err := p.take(context.Background(), "m", limit.Interactive, time.Hour)
		var out *OutError
		if !errors.As(err, &out) || time.Since(start) != 0 || !out.Resets.Equal(start.Add(2*time.Hour)) {
			t.Fatalf("take: %v after %v, want OutError at once, resets in 2h", err, time.Since(start))
		}
		views := Pools{"openai": p}.Views(time.Now())
		if views[0].State != Out || !views[0].Until.IsZero() || views[1].State != Out || views[1].Until.IsZero() {
			t.Errorf("views %+v: want A out until reset, B out with a time", views)
		}
		if n, err := (Pools{"openai": p}).Reset(p.keys[0].hash); n != 1 || err != nil {
			t.Fatalf("reset: %d %v", n, err)
		}
		if i, err := p.take(context.Background(), "m", limit.Interactive, 0); i != 0 || err != nil {
			t.Errorf("after the reset: key %d, %v; want A", i, err)
		}
		var unknown *UnknownKeyError
		if _, err := (Pools{"openai": p}).Reset("00000000"); !errors.As(err, &unknown) {
			t.Errorf("reset of an unknown hash: %v", err)
		}
	})
}

// A spent window in the rate-limit headers of a 200 pauses the key for
// its model too, shown as the key's pause; a 429 without any hint pauses
// nothing but cuts the key's pace for its model to one call a second.
func TestKeyPoolLearnsHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1, 1)
		h := http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"20s"}}
		if p.learn(0, hook.Answer{Model: "m", Sent: time.Now(), Status: 200, Quota: false, Header: h, RetryAfter: 0}) {
			t.Error("a 200 asks for no move")
		}
		p.learn(1, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: false, Header: http.Header{}, RetryAfter: 0})
		v := Pools{"openai": p}.Views(time.Now())
		if v[0].State != Paused || v[0].Until.Sub(time.Now()) != 20*time.Second {
			t.Errorf("A: %+v, want paused 20s", v[0])
		}
		if v[1].State != Ready {
			t.Errorf("B: %+v, want ready: a 429 without a hint pauses nothing", v[1])
		}
		start := time.Now()
		var at []time.Duration
		for range 3 {
			if i, err := p.take(context.Background(), "m", limit.Interactive, 10*time.Second); i != 1 || err != nil {
				t.Fatalf("take: key %d, %v; want B (A is paused)", i, err)
			}
			at = append(at, time.Since(start))
		}
		if at[1]-at[0] != time.Second || at[2]-at[1] != time.Second {
			t.Errorf("B's calls went at %v, want one a second: the 429's pace", at)
		}
	})
}

// What a key's answer teaches holds the key's calls to that model only,
// as the providers limit each model: a 429 with Retry-After on model m
// pauses key A for m, while A still takes n's calls.
func TestKeyPoolLimitsPerModel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1, 1)
		p.learn(0, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: false, Header: http.Header{}, RetryAfter: 30 * time.Second})
		if got := takes(t, p, 4); got != "BBBB" {
			t.Errorf("model m with A paused for it: %s, want BBBB", got)
		}
		var got []byte
		for range 4 {
			i, err := p.take(context.Background(), "n", limit.Interactive, 0)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, byte('A'+i))
		}
		if !strings.Contains(string(got), "A") {
			t.Errorf("model n: %s, want A among its keys: A's pause is m's", got)
		}
	})
}

// When a key's pause ends, the calls that waited for it leave at the pace
// its 429 taught, one by one, not all at once: five waiters behind a
// 2 s Retry-After (nothing else known: one call per 2 s) leave 2 s apart.
func TestKeyPoolNoHerdWhenPauseEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1)
		start := time.Now()
		p.learn(0, hook.Answer{Model: "m", Sent: start, Status: 429, Quota: false, Header: http.Header{}, RetryAfter: 2 * time.Second})
		var mu sync.Mutex
		var at []time.Duration
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				if _, err := p.take(context.Background(), "m", limit.Interactive, time.Minute); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				at = append(at, time.Since(start))
				mu.Unlock()
			})
		}
		wg.Wait()
		slices.Sort(at)
		for i := 1; i < len(at); i++ {
			if at[i]-at[i-1] < 2*time.Second {
				t.Fatalf("the waiters left at %v, want 2 s apart after the pause", at)
			}
		}
		if at[0] != 2*time.Second {
			t.Errorf("the first waiter left at %v, want at the pause's end, 2s", at[0])
		}
	})
}

// failingLimits is a limits store that fails every read and write while
// down is set, counting what it was asked.
type failingLimits struct {
	*limit.Memory
	asked int
	down  bool
}

var errLimitsDown = errors.New("limits store down")

func (s *failingLimits) PausedUntil(key string) (time.Time, error) {
	s.asked++
	if s.down {
		return time.Time{}, errLimitsDown
	}
	return s.Memory.PausedUntil(key)
}

func (s *failingLimits) Pause(key string, until time.Time) error {
	s.asked++
	if s.down {
		return errLimitsDown
	}
	return s.Memory.Pause(key, until)
}

// A pool whose store fails lets every call through on some key, and
// after the failure does not ask the store for a second (package rest),
// so that a hanging Redis costs one call a second its timeout, not each
// call six (two keys: its last reset, its pause and its quota-out); then
// it asks again.
func TestPoolStoreRests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &failingLimits{Memory: limit.NewMemory(), down: true}
		p := testPoolOn(t, st, 1, 1)
		for range 20 {
			i, err := p.take(context.Background(), "m", limit.Interactive, 0)
			if err != nil {
				t.Fatalf("take with the store down: %v", err)
			}
			p.learn(i, hook.Answer{Model: "m", Sent: time.Now(), Status: http.StatusTooManyRequests, Quota: true, Header: nil, RetryAfter: time.Second}) // its quota-out cannot be kept
		}
		if st.asked != 1 {
			t.Errorf("20 calls asked a failed store %d times, want once", st.asked)
		}
		time.Sleep(time.Second)
		st.down = false
		if _, err := p.take(context.Background(), "m", limit.Interactive, 0); err != nil || st.asked != 7 {
			t.Errorf("after its rest: %v, store asked %d times in all, want 7 (the six states read again)", err, st.asked)
		}
	})
}

// A reset forgets what a key's answers taught of its limits, for every
// model and every process on the store: a key paused for a minute for m
// and paced at one call a minute is taken again at once, by another pool
// on the same store (another gateway), as a new key would be.
func TestResetForgetsTheKeysLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := limit.NewMemory()
		a, b := testPoolOn(t, st, 1, 1), testPoolOn(t, st, 1, 1)
		a.learn(0, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: false, Header: http.Header{}, RetryAfter: time.Minute})
		if got := takes(t, b, 2); got != "BB" {
			t.Fatalf("before the reset: %s, want BB (A paused for m)", got)
		}
		if n, err := (Pools{"openai": a}).Reset(a.keys[0].hash); n != 1 || err != nil {
			t.Fatalf("reset: %d %v", n, err)
		}
		if got := takes(t, b, 4); strings.Count(got, "A") != 2 {
			t.Errorf("after the reset: %s, want A twice in four: its pause and pace forgotten", got)
		}
		// What it learns after the reset holds again.
		b.learn(0, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: false, Header: http.Header{}, RetryAfter: time.Minute})
		if got := takes(t, a, 2); got != "BB" {
			t.Errorf("after a new 429: %s, want BB", got)
		}
	})
}
