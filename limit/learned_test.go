package limit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
)

// header returns a header of the pairs kv.
func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// spent120 is an OpenAI answer of a window of 120 requests a minute, spent.
func spent120() http.Header {
	return header("x-ratelimit-limit-requests", "120", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1m0s")
}

// admitTimes starts the calls of each Limiter of ls at once (n in all,
// spread over them) for provider's model, each willing to wait maxWait,
// and returns when each was admitted since the start, sorted, and the
// refusals.
func admitTimes(ls []*Limiter, n int, model string, maxWait time.Duration) ([]time.Duration, []error) {
	start := time.Now()
	var mu sync.Mutex
	var ats []time.Duration
	var errs []error
	var wg sync.WaitGroup
	for i := range n {
		l := ls[i%len(ls)]
		wg.Go(func() {
			_, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: model, MaxWait: maxWait})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			ats = append(ats, time.Since(start))
			done(0)
		})
	}
	wg.Wait()
	slices.Sort(ats)
	return ats, errs
}

// TestLearnedPauseReleasesPaced: a rate-limit 429 (Retry-After 1 s) whose
// header says the window of 120 requests a minute is spent, then 20 calls
// at once, shared by two Limiters on one Store (two gateways on one state
// directory). The calls are not released together when the pause ends:
// the first goes at 1 s, then one per interval of the learned bucket
// (60 s·120/119 per 120 requests: 504.2 ms), the k-th at k intervals,
// never sooner than a provider refilling 120 a minute from empty would
// have the k-th request (k·500 ms) and at most 1% later. Before the
// bucket was learned, all 20 went at 1 s, 19 of them into a 429.
func TestLearnedPauseReleasesPaced(t *testing.T) {
	for _, store := range []string{"memory", "file"} {
		t.Run(store, func(t *testing.T) {
			var a, b Store = NewMemory(), nil
			var files []*File
			if store == "file" {
				dir := t.TempDir()
				files = []*File{fileStore(t, dir, nil), fileStore(t, dir, nil)}
				a, b = files[0], files[1]
			} else {
				b = a
			}
			synctest.Test(t, func(t *testing.T) {
				defer func() {
					for _, f := range files {
						f.Close() // the sweep a Learn may have started in the bubble
					}
				}()
				ls := []*Limiter{{Store: a}, {Store: b}}
				ls[0].Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "openai", Model: "gpt-4o", Status: http.StatusTooManyRequests, Header: spent120(), RetryAfter: time.Second})
				ats, errs := admitTimes(ls, 20, "gpt-4o", time.Minute)
				if len(errs) > 0 {
					t.Fatalf("%d calls refused: %v", len(errs), errs[0])
				}
				r, _ := windowRate(120, 0, time.Minute)
				iv := time.Duration(r.Interval(1))
				for k, at := range ats {
					want := max(time.Second, time.Duration(k+1)*iv)
					if at != want {
						t.Fatalf("call %d admitted at %v, want %v (admitted at %v)", k+1, at, want, ats)
					}
					if at < time.Duration(k+1)*500*time.Millisecond || at > max(time.Second, time.Duration(k+1)*505*time.Millisecond) {
						t.Fatalf("call %d admitted at %v: sooner than the provider's refill or over 1%% later", k+1, at)
					}
				}
				t.Logf("after a learned pause, 20 calls admitted at %v … %v, one per %v", ats[0], ats[len(ats)-1], iv)
			})
		})
	}
}

// TestLearnedBucketFromHeaders: an answer of a window of 120 a minute
// with 60 left, 30 s from full, and no 429: the calls that come next
// start at once while the provider has room, less the tenth of the window
// kept for calls in flight (48 of the 60 it says are left), and the 49th
// waits one interval of the bucket: it is refused when it may not wait,
// and goes one interval later when it may.
func TestLearnedBucketFromHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{}
		l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "openai", Model: "gpt-4o", Status: http.StatusOK, Header: header("x-ratelimit-limit-requests", "120", "x-ratelimit-remaining-requests", "60", "x-ratelimit-reset-requests", "30s")})
		ats, errs := admitTimes([]*Limiter{l}, 49, "gpt-4o", 0)
		var e *Error
		if len(ats) != 48 || ats[47] != 0 || len(errs) != 1 || !errors.As(errs[0], &e) || e.Key != "pause:openai/gpt-4o" || e.Limit != "pause" {
			t.Fatalf("49 calls that may not wait: %d admitted (at %v), refused %v; want 48 at once and the 49th refused by the learned bucket",
				len(ats), ats, errs)
		}
		r, ok := windowRate(120, 60, 30*time.Second)
		if !ok || r.Per != scaled(30*time.Second, 120, 59) {
			t.Fatalf("rate %+v %v, want 120 per 30s·120/59", r, ok)
		}
		if w := time.Duration(r.Interval(1)); e.Wait != w {
			t.Fatalf("the 49th would have waited %v, want one interval, %v", e.Wait, w)
		}
		waited, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "gpt-4o", MaxWait: time.Minute})
		if err != nil || waited != time.Duration(r.Interval(1)) {
			t.Fatalf("a call that may wait: waited %v (%v), want %v", waited, err, time.Duration(r.Interval(1)))
		}
		bs, err := l.Buckets()
		if err != nil || len(bs) != 1 || bs[0].Learned != r || bs[0].FreeAt.Sub(time.Now()) != time.Duration(r.Interval(1)) {
			t.Fatalf("Buckets %+v (%v), want the pause with the learned %+v, next free in one interval", bs, err, r)
		}
		// Spent: the window says so, and the headroom goes: the next
		// request one interval on, not a tenth of the window later.
		time.Sleep(time.Minute)
		l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "openai", Model: "gpt-4o", Status: http.StatusOK, Header: spent120()})
		if n := l.Stats()["pause"].Paused; n != 0 {
			t.Fatalf("%d pauses learned; a spent window whose bucket is learned pauses nothing", n)
		}
		r, _ = windowRate(120, 0, time.Minute)
		if waited, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "gpt-4o", MaxWait: time.Minute}); err != nil || waited != time.Duration(r.Interval(1)) {
			t.Fatalf("after a spent window: waited %v (%v), want one interval, %v", waited, err, time.Duration(r.Interval(1)))
		}
	})
}

// TestLearnedScope: OpenAI and Anthropic limit each model on its own, so
// a 429 for one model (and the bucket its header tells) holds that model
// only: 50 calls to another start at once. A provider whose limits its
// models share (SharedLimits) holds them all.
func TestLearnedScope(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprint("shared=", shared), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &Limiter{SharedLimits: func(p string) bool { return shared && p == "openai" }}
				l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "openai", Model: "gpt-4o", Status: http.StatusTooManyRequests, Header: spent120(), RetryAfter: time.Second})
				ats, errs := admitTimes([]*Limiter{l}, 50, "gpt-4o-mini", time.Minute)
				switch {
				case len(errs) > 0:
					t.Fatalf("refused: %v", errs[0])
				case !shared && ats[len(ats)-1] != 0:
					t.Fatalf("another model's calls admitted at %v … %v, want all at once", ats[0], ats[len(ats)-1])
				case shared && (ats[0] != time.Second || ats[len(ats)-1] < 20*time.Second):
					t.Fatalf("a shared limit: another model's calls admitted at %v … %v, want from 1s, paced", ats[0], ats[len(ats)-1])
				}
				if w, _, _ := l.Wait(context.Background(), hook.Ask{Provider: "anthropic", Model: "gpt-4o"}); w != 0 {
					t.Fatalf("another provider waited %v", w)
				}
			})
		})
	}
}

// TestLearnedAnthropic: Anthropic's headers teach the same bucket (the
// reset an RFC 3339 time), and a 429 without a window to read empties
// the bucket learned before and halves the pace: after its pause the
// calls are paced, not released together.
func TestLearnedAnthropic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{}
		now := time.Now()
		l.Learn(hook.Answer{Dialect: dialect.Anthropic, Provider: "anthropic", Model: "claude", Status: http.StatusOK, Header: header("anthropic-ratelimit-requests-limit", "50",
			"anthropic-ratelimit-requests-remaining", "10", "anthropic-ratelimit-requests-reset", now.Add(48*time.Second).UTC().Format(time.RFC3339))})
		l.Learn(hook.Answer{Dialect: dialect.Anthropic, Provider: "anthropic", Model: "claude", Status: http.StatusTooManyRequests, RetryAfter: 2 * time.Second})
		start := time.Now()
		var ats []time.Duration
		for range 5 {
			if _, _, err := l.Wait(context.Background(), hook.Ask{Provider: "anthropic", Model: "claude", MaxWait: time.Minute}); err != nil {
				t.Fatal(err)
			}
			ats = append(ats, time.Since(start))
		}
		// The 429 came while the bucket learned had room: it cuts the
		// pace to half the bucket's rate (50 per 48s·50/39: 1.2308 s a
		// request), one call every 2.4615 s from the end of the pause.
		r, _ := windowRate(50, 10, 48*time.Second)
		p := PaceStep(Pace{}, PaceEvent{Limited: true, Ceiling: r.perSecond()}, 0)
		iv := time.Duration(p.Rate().Interval(1))
		for k, at := range ats {
			if want := 2*time.Second + time.Duration(k)*iv; at != want {
				t.Fatalf("call %d at %v, want %v (all: %v)", k+1, at, want, ats)
			}
		}
	})
}

// TestWindowRate: the bucket a requests window tells, and when it tells
// none.
func TestWindowRate(t *testing.T) {
	for _, tt := range []struct {
		size, left int64
		reset      time.Duration
		ok         bool
		per        time.Duration
	}{
		{120, 0, time.Minute, true, scaled(time.Minute, 120, 119)},
		{120, 60, 30 * time.Second, true, scaled(30*time.Second, 120, 59)},
		{120, 61, 30 * time.Second, false, 0}, // more than half left
		{2, 0, time.Second, true, 2 * time.Second},
		{1, 0, time.Second, false, 0},                        // one request: nothing known to refill in reset
		{2, 1, time.Second, false, 0},                        // the same
		{60, 0, 100 * time.Hour, true, 60 * MaxPause},        // an hour a request at most
		{1_000_000, 0, 200 * time.Hour, true, maxLearnedPer}, // and a week in all
		{1 << 40, 0, time.Nanosecond, false, 0},              // under a nanosecond a request
		{120, 0, time.Millisecond, true, scaled(time.Millisecond, 120, 119)},
	} {
		r, ok := windowRate(tt.size, tt.left, tt.reset)
		if ok != tt.ok || r.Per != tt.per || (ok && (r.Limit != tt.size || r.Burst != tt.size)) {
			t.Errorf("window %d, %d left, reset %v: %+v %v, want %v per %v", tt.size, tt.left, tt.reset, r, ok, tt.per, tt.ok)
		}
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		d          dialect.Dialect
		h          http.Header
		size, left int64
		reset      time.Duration
		ok         bool
	}{
		{dialect.OpenAI, spent120(), 120, 0, time.Minute, true},
		{dialect.Azure, header("x-ratelimit-limit-requests", "120", "x-ratelimit-remaining-requests", "7", "x-ratelimit-reset-requests", "6"), 120, 7, 6 * time.Second, true}, // Azure's seconds
		{dialect.Anthropic, header("anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T12:00:30Z"), 50, 0, 30 * time.Second, true},
		{dialect.OpenAI, header("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s"), 0, 0, 0, false}, // no size
		{dialect.Azure, header("x-ratelimit-limit-requests", "-1", "x-ratelimit-remaining-requests", "-1", "x-ratelimit-reset-requests", "0"), 0, 0, 0, false},
		{dialect.OpenAI, header("x-ratelimit-limit-requests", "10", "x-ratelimit-remaining-requests", "11", "x-ratelimit-reset-requests", "1s"), 0, 0, 0, false},
		{dialect.OpenAI, header("x-ratelimit-limit-requests", "10", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "soon"), 0, 0, 0, false},
		{dialect.Anthropic, header("anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T11:59:00Z"), 0, 0, 0, false},
		{dialect.OpenAI, header("x-ratelimit-limit-tokens", "10", "x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "1s"), 0, 0, 0, false}, // tokens: no bucket
		{dialect.OpenAI, nil, 0, 0, 0, false},
		{nil, spent120(), 0, 0, 0, false}, // no dialect: no header read
	} {
		w := readWindows(tt.d, tt.h, now)
		if w.size != tt.size || w.left != tt.left || w.reset != tt.reset || w.learnable != tt.ok {
			t.Errorf("%v: window %d, %d left, reset %v, %v; want %d, %d, %v, %v", tt.h, w.size, w.left, w.reset, w.learnable, tt.size, tt.left, tt.reset, tt.ok)
		}
	}
}

// TestLearnStep: a TAT learned at another rate keeps the units it holds
// out; the used units raise it, never lower it.
func TestLearnStep(t *testing.T) {
	const s = int64(time.Second)
	slow := Rate{Limit: 60, Per: time.Minute, Burst: 60} // 1 s a unit
	fast := Rate{Limit: 120, Per: time.Minute, Burst: 120}
	for _, tt := range []struct {
		tat, now  int64
		old, r    Rate
		used, out int64
	}{
		{100 * s, 40 * s, slow, fast, 0, 70 * s},   // 60 units out at 1 s: 60 at 500 ms
		{100 * s, 40 * s, fast, slow, 0, 160 * s},  // 120 units at 500 ms: 120 at 1 s
		{100 * s, 40 * s, slow, fast, 100, 90 * s}, // 100 used: raised
		{100 * s, 40 * s, fast, fast, 10, 100 * s}, // the same rate, more out than said: kept
		{30 * s, 40 * s, slow, fast, 0, 40 * s},    // in the past: nothing to scale; full now
		{30 * s, 40 * s, Rate{}, fast, 4, 42 * s},  // nothing learned before
	} {
		if got := LearnStep(tt.tat, tt.now, tt.old, tt.r, tt.used); got != tt.out {
			t.Errorf("LearnStep(%v, %v, %v → %v, used %d) = %v, want %v", time.Duration(tt.tat), time.Duration(tt.now),
				tt.old.Per/time.Duration(tt.old.Limit+1), tt.r.Per/time.Duration(tt.r.Limit), tt.used, time.Duration(got), time.Duration(tt.out))
		}
	}
}

// TestStepBurst: a token bucket's steps: a full bucket hands out its
// Burst at once, then one unit per interval; a Cancel of the last
// reservation, waited or not, gives it back.
func TestStepBurst(t *testing.T) {
	r := Rate{Limit: 4, Per: 4 * time.Second, Burst: 4} // 1 s a unit, 4 at most
	const s = int64(time.Second)
	var tat int64
	var ats []int64
	for range 6 {
		next, at, ok := Step(tat, 10*s, 0, r, 1, time.Minute)
		if !ok {
			t.Fatal("refused")
		}
		tat = next
		ats = append(ats, at)
	}
	if want := []int64{10 * s, 10 * s, 10 * s, 10 * s, 11 * s, 12 * s}; !slices.Equal(ats, want) || tat != 16*s {
		t.Fatalf("slots %v TAT %v, want %v and 16s", ats, tat, want)
	}
	if got := cancelled(tat, r, 12*s, 1); got != 15*s {
		t.Fatalf("cancelling the last, waited: TAT %v, want 15s", time.Duration(got))
	}
	if got := cancelled(tat, r, 11*s, 1); got != tat {
		t.Fatalf("cancelling one not last: TAT %v, want it kept", time.Duration(got))
	}
	if _, at, ok := Step(16*s, 10*s, 0, r, 5, time.Minute); !ok || at != 16*s {
		t.Fatalf("a call dearer than the bucket: slot %v %v, want once it is full, 16s", time.Duration(at), ok)
	}
}

// scaled returns d·num/den as windowRate works it out, in float64.
func scaled(d time.Duration, num, den int64) time.Duration {
	return time.Duration(float64(d) * float64(num) / float64(den))
}

// TestStoresLearn: Learn and Learned do the same in every Store: the rate
// kept with the pause, the TAT raised by what is used and scaled to a new
// rate, never lowered, a token bucket's reservations and cancels, and the
// record swept with its rate once idle.
func TestStoresLearn(t *testing.T) {
	for _, name := range []string{"memory", "file"} {
		t.Run(name, func(t *testing.T) {
			clock := newClock()
			m := &Memory{now: clock.now}
			var st Store = m
			var f *File
			if name == "file" {
				f = fileStore(t, t.TempDir(), clock)
				st = f
			}
			t0 := clock.now()
			const key = "pause:openai/m"
			fast := Rate{Limit: 120, Per: time.Minute, Burst: 120} // 500 ms a request
			slow := Rate{Limit: 60, Per: time.Minute, Burst: 60}
			tat := func() time.Duration {
				t.Helper()
				v, err := st.FreeAt(key)
				if err != nil {
					t.Fatal(err)
				}
				return v.Sub(t0)
			}
			if lr, err := st.Learned(key); err != nil || !lr.Until.IsZero() || !lr.Rate.IsZero() || !lr.Pace.IsZero() {
				t.Fatalf("nothing learned: %+v %v", lr, err)
			}
			st.Pause(key, t0.Add(time.Second))
			if err := st.Learn(key, fast, 100); err != nil {
				t.Fatal(err)
			}
			if lr, _ := st.Learned(key); !lr.Until.Equal(t0.Add(time.Second)) || lr.Rate != fast || !lr.RateAt.Equal(t0) || tat() != 50*time.Second {
				until, r := lr.Until, lr.Rate
				t.Fatalf("learned: paused until %v, %+v at %v, TAT %v; want 1s, %+v at 0s, 50s", until.Sub(t0), r, lr.RateAt.Sub(t0), tat(), fast)
			}
			st.Learn(key, fast, 10) // fewer used than it holds: kept
			if tat() != 50*time.Second {
				t.Fatalf("TAT %v after a smaller use, want 50s", tat())
			}
			st.Learn(key, slow, 10) // 100 requests out at 1 s each now
			if lr, _ := st.Learned(key); lr.Rate != slow || tat() != 100*time.Second {
				r := lr.Rate
				t.Fatalf("relearned slower: %+v, TAT %v; want %+v, 100s", r, tat(), slow)
			}
			// The bucket (60 of 60 out, and 40 more) is past full: a request
			// waits until the TAT is one bucket less one request away.
			at, ok, _ := st.Reserve(key, slow, 1, time.Time{}, time.Minute)
			if !ok || at.Sub(t0) != 41*time.Second || tat() != 101*time.Second {
				t.Fatalf("a request: at %v %v, TAT %v; want 41s, 101s", at.Sub(t0), ok, tat())
			}
			st.Cancel(key, slow, at, 1)
			if tat() != 100*time.Second {
				t.Fatalf("cancelled the last, waited: TAT %v, want 100s", tat())
			}
			clock.add(100*time.Second + idleMargin + time.Nanosecond)
			if name == "memory" {
				m.Reserve("other", fast, 1, time.Time{}, 0) // the sweep, due a minute after the last
			} else if n, err := f.sweep(clock.now().UnixNano()); err != nil || n != 1 {
				t.Fatalf("swept %d (%v), want the idle record", n, err)
			}
			if lr, _ := st.Learned(key); !lr.Rate.IsZero() {
				t.Fatalf("an idle record's rate %+v stayed, want it swept", lr.Rate)
			}
		})
	}
}
