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

// outcome is one call's Wait as a test sees it: when it was admitted, or
// how it was refused, in the bubble's time since the test began.
type outcome struct {
	admitted time.Duration
	waited   time.Duration
	done     func(int64)
	err      error
}

// waitAll starts n calls at once and returns their outcomes, admitted ones
// first in the order of their admission.
func waitAll(l *Limiter, n int, maxTokens int64, maxWait time.Duration) []outcome {
	start := time.Now()
	out := make([]outcome, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			waited, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "gpt-4o", MaxTokens: maxTokens, MaxWait: maxWait})
			out[i] = outcome{admitted: time.Since(start), waited: waited, done: done, err: err}
		})
	}
	wg.Wait()
	slices.SortStableFunc(out, func(a, b outcome) int {
		if (a.err == nil) != (b.err == nil) {
			if a.err == nil {
				return -1
			}
			return 1
		}
		return int(a.admitted - b.admitted)
	})
	return out
}

func admitted(out []outcome) int {
	n := 0
	for _, o := range out {
		if o.err == nil {
			n++
		}
	}
	return n
}

// TestWait120PerMinute: 300 calls at once under 120 requests a minute, each
// willing to wait 60 s. Slots are 500 ms apart from the first call's
// instant: slot k is at k·500 ms, and k·500 ms ≤ 60 s for k = 0…120, so
// exactly 121 are admitted, at exactly k·500 ms; the 179 others are
// refused at once with the slot they would have had: 60.5 s.
func TestWait120PerMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "rpm", Requests: Rate{Limit: 120, Per: time.Minute}}}}
		out := waitAll(l, 300, 0, time.Minute)
		if got := admitted(out); got != 121 {
			t.Fatalf("%d calls admitted, want exactly 121", got)
		}
		for k, o := range out[:121] {
			if want := time.Duration(k) * 500 * time.Millisecond; o.admitted != want || o.waited != want {
				t.Fatalf("call %d admitted at %v (waited %v), want exactly %v", k, o.admitted, o.waited, want)
			}
		}
		for _, o := range out[121:] {
			var e *Error
			if !errors.As(o.err, &e) || !errors.Is(o.err, ErrLimited) {
				t.Fatalf("refusal %v is not an *Error", o.err)
			}
			if e.Wait != 60500*time.Millisecond || e.RetryAfter() != e.Wait || o.admitted != 0 || e.Key != "limit:rpm:openai:requests" || e.Class() != "rate_limited" {
				t.Fatalf("refusal %+v after %v, want at once with 60.5s from limit:rpm:openai:requests", e, o.admitted)
			}
		}
		st := l.Stats()["rpm"]
		if st.Admitted != 121 || st.Refused != 179 || st.Queued != 0 || l.Queued() != 0 {
			t.Fatalf("stats %+v, queued %d; want 121 admitted, 179 refused, none queued", st, l.Queued())
		}
	})
}

// TestWaitQueueDepth: while calls wait, Queued and Buckets count them.
func TestWaitQueueDepth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "rpm", Requests: Rate{Limit: 120, Per: time.Minute}}}}
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "gpt-4o", MaxWait: time.Minute})
			})
		}
		synctest.Wait()
		if q := l.Queued(); q != 9 {
			t.Errorf("%d calls queued, want 9 (the first went at once)", q)
		}
		bs, err := l.Buckets()
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		want := []Bucket{
			{Key: "limit:rpm:openai:requests", FreeAt: start.Add(5 * time.Second), Queued: 9},
			{Key: "pause:openai/gpt-4o", Queued: 9},
		}
		if fmt.Sprint(bs) != fmt.Sprint(want) {
			t.Errorf("Buckets() = %v, want %v", bs, want)
		}
		wg.Wait()
		if q := l.Queued(); q != 0 {
			t.Errorf("%d calls queued after all were admitted", q)
		}
	})
}

// TestWaitTokensPerMinute: 10,000 tokens a minute, calls of 1,000 tokens:
// one call every 6 s, so exactly 10 start in each minute.
func TestWaitTokensPerMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "tpm", Tokens: Rate{Limit: 10_000, Per: time.Minute}}}}
		out := waitAll(l, 35, 1_000, 3*time.Minute)
		perMinute := make([]int, 4)
		for k, o := range out {
			if o.err != nil {
				continue
			}
			if want := time.Duration(k) * 6 * time.Second; o.admitted != want {
				t.Fatalf("call %d admitted at %v, want %v", k, o.admitted, want)
			}
			perMinute[o.admitted/time.Minute]++
		}
		if want := []int{10, 10, 10, 1}; !slices.Equal(perMinute, want) { // the last at exactly 180 s
			t.Fatalf("admitted per minute %v, want %v", perMinute, want)
		}
	})
}

// TestWaitSettleGivesBack: a call that reserved 5,000 tokens and used 1,000
// gives 4,000 back (24 s at 10,000 a minute): the next call of 1,000 goes
// at 6 s instead of 30 s; a call that used more than it reserved pushes the
// next one back by the difference.
func TestWaitSettleGivesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "tpm", Tokens: Rate{Limit: 10_000, Per: time.Minute}}},
			SettlesUnused: func(p string) bool { return p == "openai" }}
		ctx := context.Background()
		_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxTokens: 5_000, MaxWait: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		done(1_000)
		done(9_000) // a second call of done changes nothing
		waited, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxTokens: 1_000, MaxWait: time.Minute})
		if err != nil || waited != 5*time.Second {
			t.Fatalf("after giving back: waited %v (%v), want exactly 5s (slot at 6s)", waited, err)
		}
		done(3_000)                                                                                                                  // 2,000 more than reserved: 12 s more
		waited, _, err = l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", BodyBytes: 400, MaxTokens: 900, MaxWait: time.Minute}) // 400/4 + 900 = 1,000
		if err != nil || waited != 18*time.Second {
			t.Fatalf("after using more: waited %v (%v), want exactly 18s (slot at 6+6+12 = 24s)", waited, err)
		}
	})
}

// TestWaitCancelQueued: a queued call whose context ends returns at once
// with the context's cause; its slot goes back when it was the bucket's
// last, and is lost (never handed out twice) when it was not.
func TestWaitCancelQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "rpm", Requests: Rate{Limit: 120, Per: time.Minute}}}}
		start := time.Now()
		bg := context.Background()
		l.Wait(bg, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute}) // slot 0
		cause := errors.New("client left")
		ctx, cancel := context.WithCancelCause(bg)
		go func() {
			time.Sleep(100 * time.Millisecond)
			cancel(cause)
		}()
		waited, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute}) // slot 500 ms
		if !errors.Is(err, cause) || waited != 100*time.Millisecond {
			t.Fatalf("cancelled call: waited %v, err %v; want 100ms and the cause", waited, err)
		}
		key := "limit:rpm:openai:requests"
		if free, _ := l.store().FreeAt(key); !free.Equal(start.Add(500 * time.Millisecond)) {
			t.Fatalf("TAT after the last call's cancel: %v, want 500ms (given back)", free.Sub(start))
		}
		// Not the last: B at 500 ms, C at 1 s; cancelling B leaves the TAT at 1.5 s.
		ctxB, cancelB := context.WithCancelCause(bg)
		var wg sync.WaitGroup
		wg.Go(func() { l.Wait(ctxB, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute}) })
		synctest.Wait()
		wg.Go(func() {
			if w, _, _ := l.Wait(bg, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute}); w != 900*time.Millisecond {
				t.Errorf("C waited %v, want 900ms", w)
			}
		})
		synctest.Wait()
		cancelB(cause)
		synctest.Wait()
		if free, _ := l.store().FreeAt(key); !free.Equal(start.Add(1500 * time.Millisecond)) {
			t.Fatalf("TAT after cancelling a call not last: %v, want 1.5s (its slot lost)", free.Sub(start))
		}
		wg.Wait()
	})
}

// TestWaitLearnPauses: an answer that says the window is spent pauses the
// model for everyone, exactly as long as it says; a quota 429 does not.
func TestWaitLearnPauses(t *testing.T) {
	h := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name   string
		d      dialect.Dialect
		status int
		quota  bool
		header func(now time.Time) http.Header
		ra     time.Duration
		want   time.Duration
	}{
		{"429 with Retry-After 2s", dialect.OpenAI, 429, false, func(time.Time) http.Header { return nil }, 2 * time.Second, 2 * time.Second},
		{"quota 429 pauses nothing", dialect.OpenAI, 429, true, func(time.Time) http.Header { return nil }, 2 * time.Second, 0},
		{"OpenAI requests spent, reset 1s", dialect.OpenAI, 200, false, func(time.Time) http.Header {
			return h("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s")
		}, 0, time.Second},
		{"OpenAI tokens spent, reset 1m30.5s", dialect.OpenAI, 200, false, func(time.Time) http.Header {
			return h("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "1m30.5s", "x-ratelimit-remaining-requests", "3", "x-ratelimit-reset-requests", "6m0s")
		}, 0, 90500 * time.Millisecond},
		{"Anthropic input tokens spent", dialect.Anthropic, 200, false, func(now time.Time) http.Header {
			return h("anthropic-ratelimit-input-tokens-remaining", "0", "anthropic-ratelimit-input-tokens-reset", now.Add(3*time.Second).UTC().Format(time.RFC3339))
		}, 0, 3 * time.Second},
		{"Anthropic requests left", dialect.Anthropic, 200, false, func(now time.Time) http.Header {
			return h("anthropic-ratelimit-requests-remaining", "4", "anthropic-ratelimit-requests-reset", now.Add(3*time.Second).UTC().Format(time.RFC3339))
		}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &Limiter{}
				var learnErr error
				l.OnError = func(err error) { learnErr = err }
				if l.Learn(hook.Answer{Dialect: tt.d, Provider: "openai", Model: "gpt-4o", Status: tt.status, Quota: tt.quota, Header: tt.header(time.Now()), RetryAfter: tt.ra}); learnErr != nil {
					t.Fatal(learnErr)
				}
				waited, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "gpt-4o", MaxWait: 5 * time.Minute})
				if err != nil || waited != tt.want {
					t.Fatalf("next call waited %v (%v), want exactly %v", waited, err, tt.want)
				}
				if w, _, _ := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "gpt-5"}); w != 0 {
					t.Fatalf("another model waited %v, want 0", w)
				}
			})
		})
	}
}

// TestWaitPauseWhileQueued: a pause learned while a call waits is honoured
// when its wait ends: it queues again, within its maximum wait of its start.
func TestWaitPauseWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "rpm", Requests: Rate{Limit: 60, Per: time.Minute}}}}
		bg := context.Background()
		l.Wait(bg, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute}) // slot 0; next at 1 s
		var wg sync.WaitGroup
		var long, short outcome
		wg.Go(func() {
			w, _, err := l.Wait(bg, hook.Ask{Provider: "openai", Model: "m", MaxWait: 5 * time.Second})
			long = outcome{waited: w, err: err}
		})
		synctest.Wait()
		wg.Go(func() {
			w, _, err := l.Wait(bg, hook.Ask{Provider: "openai", Model: "m", MaxWait: 2500 * time.Millisecond}) // slot 2 s
			short = outcome{waited: w, err: err}
		})
		time.Sleep(500 * time.Millisecond)
		l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "openai", Model: "m", Status: 429, RetryAfter: 2 * time.Second}) // paused until 2.5 s
		wg.Wait()
		// The 429 also cut the model's pace to one call per 2 s from the
		// pause's end. Both calls woke while paused (at 1 s and 2 s), gave
		// their slots back and queued again: neither went before the
		// pause's end, the long one went within its maximum wait, and the
		// short one too or was refused by a bucket once it woke.
		for _, o := range []struct {
			name    string
			out     outcome
			maxWait time.Duration
		}{{"long", long, 5 * time.Second}, {"short", short, 2500 * time.Millisecond}} {
			var e *Error
			switch {
			case o.out.err == nil && (o.out.waited < 2500*time.Millisecond || o.out.waited > o.maxWait):
				t.Errorf("%s call admitted after %v: before the pause's end (2.5s) or past its maximum wait %v", o.name, o.out.waited, o.maxWait)
			case o.out.err != nil && !errors.As(o.out.err, &e):
				t.Errorf("%s call: %v, want admitted or refused by a bucket", o.name, o.out.err)
			}
		}
		if long.err != nil {
			t.Errorf("the call that may wait 5 s: %v, want admitted after the pause", long.err)
		}
	})
}

// TestWaitPausedBeyondMaxWait: a call whose model is paused past its
// maximum wait is refused at once by the pause.
func TestWaitPausedBeyondMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{}
		l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "openai", Model: "m", Status: 429, RetryAfter: 90 * time.Minute}) // cut to an hour
		w, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
		var e *Error
		if !errors.As(err, &e) || e.Key != "pause:openai/m" || e.Wait != MaxPause || w != 0 {
			t.Fatalf("paused call: %v after %v, want refused at once by pause:openai/m with 1h", err, w)
		}
		if st := l.Stats()["pause"]; st.Refused != 1 || st.Paused != 1 {
			t.Fatalf("pause stats %+v, want 1 refused, 1 pause", st)
		}
	})
}

// A provider that keeps what a call reserved (OpenAI counts max_tokens)
// gets nothing back from a call that used less; one that used more still
// pays the rest.
func TestWaitSettleKeepsUnusedWhenProviderDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "tpm", Tokens: Rate{Limit: 10_000, Per: time.Minute}}}}
		ctx := context.Background()
		_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxTokens: 5_000, MaxWait: time.Minute}) // 30 s of the bucket
		if err != nil {
			t.Fatal(err)
		}
		done(1_000) // used 1,000 of 5,000: nothing given back
		waited, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxTokens: 1_000, MaxWait: time.Minute})
		if err != nil || waited != 30*time.Second {
			t.Fatalf("waited %v (%v), want exactly 30s: the unused 4,000 stay spent", waited, err)
		}
		done(3_000) // 2,000 more than reserved: 12 s more
		waited, _, err = l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxTokens: 1_000, MaxWait: time.Minute})
		if err != nil || waited != 18*time.Second {
			t.Fatalf("waited %v (%v), want exactly 18s (6 s reserved + 12 s paid after)", waited, err)
		}
	})
}

// TestBucketsTrimIdleKeys: a key stays listed for ten minutes after its
// last use, and longer while a call waits under it; then it is dropped.
func TestBucketsTrimIdleKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "rpm", Scope: "model", Requests: Rate{Limit: 1, Per: time.Hour}}}}
		ctx := context.Background()
		l.Wait(ctx, hook.Ask{Provider: "openai", Model: "idle", MaxWait: time.Hour}) // admitted at once
		go l.Wait(ctx, hook.Ask{Provider: "openai", Model: "busy", MaxWait: time.Hour})
		go l.Wait(ctx, hook.Ask{Provider: "openai", Model: "busy", MaxWait: time.Hour}) // waits an hour
		synctest.Wait()
		keys := func() []string {
			bs, _ := l.Buckets()
			var ks []string
			for _, b := range bs {
				ks = append(ks, b.Key)
			}
			return ks
		}
		all := "[limit:rpm:openai/busy:requests limit:rpm:openai/idle:requests pause:openai/busy pause:openai/idle]"
		if got := fmt.Sprint(keys()); got != all {
			t.Fatalf("listed %s, want %s", got, all)
		}
		time.Sleep(11 * time.Minute)
		l.Wait(ctx, hook.Ask{Provider: "anthropic", Model: "x", MaxWait: time.Hour}) // a use that trims
		want := "[limit:rpm:anthropic/x:requests limit:rpm:openai/busy:requests pause:anthropic/x pause:openai/busy]"
		if got := fmt.Sprint(keys()); got != want {
			t.Fatalf("after 11 idle minutes, listed %s, want %s (the idle model's keys dropped, the waiting call's kept)", got, want)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
	})
}
