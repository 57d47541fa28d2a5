package limit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/hook"
)

// TestWaitSameInstantInEveryBucket: a call under a request limit and a
// token limit takes the same instant in both; the dearer one spaces the
// calls and no request slot is wasted between them.
// Without the look ahead (a Store whose FreeAt tells nothing, as when
// another call reserves between the look and the reservation), a bucket
// found behind the others makes the call give back and take again.
func TestWaitSameInstantInEveryBucket(t *testing.T) {
	for _, blind := range []bool{false, true} {
		t.Run(fmt.Sprint("blind=", blind), func(t *testing.T) { sameInstant(t, blind) })
	}
}

// blindStore is a Memory whose FreeAt tells nothing.
type blindStore struct{ *Memory }

func (blindStore) FreeAt(string) (time.Time, error) { return time.Time{}, nil }

func sameInstant(t *testing.T, blind bool) {
	synctest.Test(t, func(t *testing.T) {
		var st Store = NewMemory()
		if blind {
			st = blindStore{NewMemory()}
		}
		l := &Limiter{Store: st, Limits: []Limit{
			{Name: "rpm", Requests: Rate{Limit: 120, Per: time.Minute}},
			{Name: "tpm", Tokens: Rate{Limit: 10_000, Per: time.Minute}},
		}}
		start := time.Now()
		out := make([]outcome, 5)
		var wg sync.WaitGroup
		for k := range out { // one after the other: each reserves, then sleeps
			wg.Go(func() {
				_, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "gpt-4o", MaxTokens: 1_000, MaxWait: time.Minute})
				out[k] = outcome{admitted: time.Since(start), err: err}
			})
			synctest.Wait()
		}
		wg.Wait()
		for k, o := range out {
			if want := time.Duration(k) * 6 * time.Second; o.err != nil || o.admitted != want {
				t.Fatalf("call %d admitted at %v (%v), want %v", k, o.admitted, o.err, want)
			}
		}
		mem, _ := st.(*Memory)
		if blind {
			mem = st.(blindStore).Memory
		}
		req, _ := mem.FreeAt("limit:rpm:openai:requests")
		tok, _ := mem.FreeAt("limit:tpm:openai:tokens")
		if req.Sub(start) != 24500*time.Millisecond || tok.Sub(start) != 30*time.Second {
			t.Fatalf("TATs %v and %v, want 24.5s (last slot + 500ms) and 30s", req.Sub(start), tok.Sub(start))
		}
	})
}

// TestWaitScopes: which calls share a bucket.
func TestWaitScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rate := Rate{Limit: 1, Per: time.Second}
		l := &Limiter{
			Limits: []Limit{
				{Name: "p", Requests: rate},                                      // per provider
				{Name: "m", Scope: "model", Requests: rate},                      // per model
				{Name: "k", Scope: "key", Requests: rate},                        // per client
				{Name: "a", Scope: "all", Provider: "anthropic", Requests: rate}, // anthropic only
			},
		}
		var wg sync.WaitGroup
		for _, c := range []struct{ client, provider, model string }{
			{"alice", "openai", "gpt-4o"}, {"bob", "openai", "gpt-5"}, {"", "anthropic", "claude"}, {"", "openai", "gpt-4o"},
		} {
			wg.Go(func() {
				l.Wait(context.Background(), hook.Ask{Caller: hook.Caller{ID: c.client}, Provider: c.provider, Model: c.model, MaxWait: time.Minute})
			})
			synctest.Wait() // one after the other, in this order
		}
		wg.Wait()
		bs, _ := l.Buckets()
		var keys []string
		for _, b := range bs {
			keys = append(keys, b.Key)
		}
		want := "limit:a:all:requests limit:k:-:requests limit:k:alice:requests limit:k:bob:requests " +
			"limit:m:anthropic/claude:requests limit:m:openai/gpt-4o:requests limit:m:openai/gpt-5:requests " +
			"limit:p:anthropic:requests limit:p:openai:requests pause:anthropic/claude pause:openai/gpt-4o pause:openai/gpt-5"
		if got := strings.Join(keys, " "); got != want {
			t.Fatalf("keys\n%s\nwant\n%s", got, want)
		}
		// openai's provider bucket took three calls, 1 s apart: free at 3 s.
		if free, _ := l.store().FreeAt("limit:p:openai:requests"); free.Sub(bs[0].FreeAt) != 2*time.Second {
			t.Errorf("openai's bucket free %v after the anthropic-only one, want 2s", free.Sub(bs[0].FreeAt))
		}
	})
}

// TestLimitCheck: a bad limit is refused with one line naming it.
func TestLimitCheck(t *testing.T) {
	tests := []struct {
		l    Limit
		want string
	}{
		{Limit{Requests: Rate{Limit: 1, Per: time.Second}}, `limit name "": give each limit a name without ':'`},
		{Limit{Name: "a:b"}, `limit name "a:b"`},
		{Limit{Name: "x", Scope: "user"}, `limit x: scope "user": use provider, model, key or all`},
		{Limit{Name: "x", Requests: Rate{Limit: -1, Per: time.Second}}, "limit x: requests -1 per 1s: give a limit ≥ 0 and a period > 0"},
		{Limit{Name: "x", Tokens: Rate{Limit: 5, Per: 0}}, "limit x: tokens 5 per 0s"},
		{Limit{Name: "x", Scope: "key", Tokens: Rate{Limit: 5, Per: time.Minute}}, ""},
	}
	for _, tt := range tests {
		err := tt.l.Check()
		if (tt.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Check(%+v) = %v, want %q", tt.l, err, tt.want)
		}
	}
	l := &Limiter{Limits: []Limit{{Name: "x", Scope: "user"}}}
	if _, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m"}); err == nil || done == nil {
		t.Errorf("Wait under a bad limit: %v, want its error and a usable done", err)
	}
}

// TestWaitZeroLimiter: a zero Limiter admits at once and done is safe.
func TestWaitZeroLimiter(t *testing.T) {
	var l Limiter
	w, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", BodyBytes: 100, MaxTokens: 10})
	if err != nil || w > time.Second {
		t.Fatalf("zero Limiter: %v %v", w, err)
	}
	done(50)
	done(0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"}); err != context.Canceled {
		t.Fatalf("ended context: %v, want context.Canceled", err)
	}
}
