package gateway

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
)

// testPool is a pool of the keys named by weight, over a Memory store.
func testPool(t *testing.T, weights ...int) *keyPool {
	t.Helper()
	p := config.Provider{Kind: config.KindOpenAI}
	env := map[string]string{}
	for i, w := range weights {
		name := "K" + string(rune('A'+i))
		env[name] = "sk-" + name
		p.APIKeys = append(p.APIKeys, config.PoolKey{Env: name, Weight: w})
	}
	kp, err := newKeyPool("openai", p, func(k string) string { return env[k] }, limit.NewMemory())
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// takes returns the keys (by letter) of n takes in a row.
func takes(t *testing.T, p *keyPool, n int) string {
	t.Helper()
	var b strings.Builder
	for range n {
		i, err := p.take(context.Background(), 0)
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
		if !p.learn(0, 429, false, http.Header{}, 2*time.Second) { // A paused 2 s
			t.Fatal("learn says no other key is ready")
		}
		p.learn(1, 429, true, http.Header{}, 5*time.Second) // B out 5 s
		if got := takes(t, p, 3); got != "CCC" {
			t.Errorf("with A paused and B out: %s, want CCC", got)
		}
		time.Sleep(2 * time.Second)
		if got := takes(t, p, 4); strings.Contains(got, "B") || !strings.Contains(got, "A") {
			t.Errorf("after A's pause: %s, want A and C only", got)
		}
		time.Sleep(3 * time.Second)
		if got := takes(t, p, 6); strings.Count(got, "B") != 2 {
			t.Errorf("after B's window: %s, want B twice in six", got)
		}
	})
}

// With every key paused a take waits for the first to be ready, exactly,
// within maxWait; beyond it, it is refused at once with the wait.
func TestKeyPoolQueuesWhilePaused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1, 1)
		if p.learn(0, 429, false, http.Header{}, 3*time.Second) != true {
			t.Fatal("B should be ready")
		}
		if p.learn(1, 429, false, http.Header{"Retry-After": {"1"}}, time.Second) {
			t.Fatal("learn says a key is ready with both paused")
		}
		_, err := p.take(context.Background(), 500*time.Millisecond)
		var le *limit.Error
		if !errors.As(err, &le) || le.Wait != time.Second {
			t.Fatalf("take with 500ms to wait: %v, want refused with 1s", err)
		}
		start := time.Now()
		i, err := p.take(context.Background(), 10*time.Second)
		if err != nil || i != 1 || time.Since(start) != time.Second {
			t.Errorf("take: key %d, %v after %v; want B after exactly 1s", i, err, time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		p.learn(1, 429, false, http.Header{}, time.Minute)
		if _, err := p.take(ctx, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
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
		p.learn(0, 429, true, http.Header{}, 0)           // until reset
		p.learn(1, 429, true, http.Header{}, 2*time.Hour) // its window
		start := time.Now()
		_, err := p.take(context.Background(), time.Hour)
		var out *keysOutError
		if !errors.As(err, &out) || time.Since(start) != 0 || !out.resets.Equal(start.Add(2*time.Hour)) {
			t.Fatalf("take: %v after %v, want keysOutError at once, resets in 2h", err, time.Since(start))
		}
		views := KeyViews(KeyPools{"openai": p}, time.Now())
		if views[0].State != KeyOut || !views[0].Until.IsZero() || views[1].State != KeyOut || views[1].Until.IsZero() {
			t.Errorf("views %+v: want A out until reset, B out with a time", views)
		}
		if n, err := ResetKey(KeyPools{"openai": p}, p.keys[0].hash); n != 1 || err != nil {
			t.Fatalf("reset: %d %v", n, err)
		}
		if i, err := p.take(context.Background(), 0); i != 0 || err != nil {
			t.Errorf("after the reset: key %d, %v; want A", i, err)
		}
		var unknown *UnknownKeyError
		if _, err := ResetKey(KeyPools{"openai": p}, "00000000"); !errors.As(err, &unknown) {
			t.Errorf("reset of an unknown hash: %v", err)
		}
	})
}

// A spent window in the rate-limit headers of a 200 pauses the key too,
// and a 429 without any hint pauses it a second.
func TestKeyPoolLearnsHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1, 1)
		h := http.Header{"X-Ratelimit-Remaining-Requests": {"0"}, "X-Ratelimit-Reset-Requests": {"20s"}}
		if p.learn(0, 200, false, h, 0) {
			t.Error("a 200 asks for no move")
		}
		p.learn(1, 429, false, http.Header{}, 0)
		v := KeyViews(KeyPools{"openai": p}, time.Now())
		if v[0].State != KeyPaused || v[0].Until.Sub(time.Now()) != 20*time.Second {
			t.Errorf("A: %+v, want paused 20s", v[0])
		}
		if v[1].State != KeyPaused || v[1].Until.Sub(time.Now()) != noRateLimitHint {
			t.Errorf("B: %+v, want paused %v", v[1], noRateLimitHint)
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
// call four (two keys, two states each); then it asks again.
func TestPoolStoreRests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1, 1)
		st := &failingLimits{Memory: limit.NewMemory(), down: true}
		p.store = st
		for range 20 {
			i, err := p.take(context.Background(), 0)
			if err != nil {
				t.Fatalf("take with the store down: %v", err)
			}
			p.learn(i, http.StatusTooManyRequests, false, nil, time.Second) // its pause cannot be kept
		}
		if st.asked != 1 {
			t.Errorf("20 calls asked a failed store %d times, want once", st.asked)
		}
		time.Sleep(time.Second)
		st.down = false
		if _, err := p.take(context.Background(), 0); err != nil || st.asked != 5 {
			t.Errorf("after its rest: %v, store asked %d times in all, want 5 (the four states read again)", err, st.asked)
		}
	})
}
