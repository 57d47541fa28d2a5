//go:build linux

package limit

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/state"
)

// BenchmarkWait is one admitted call (no wait) under a request and a token
// limit, on each store.
func BenchmarkWait(b *testing.B) {
	limits := []Limit{{Name: "rpm", Requests: Rate{Limit: 1 << 40, Per: time.Second}}, {Name: "tpm", Tokens: Rate{Limit: 1 << 50, Per: time.Second}}}
	for _, name := range []string{"memory", "file"} {
		b.Run(name, func(b *testing.B) {
			var st Store = NewMemory()
			if name == "file" {
				f, err := NewFile(openStateB(b))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				st = f
			}
			l := &Limiter{Store: st, Limits: limits}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "gpt-4o", BodyBytes: 400, MaxTokens: 100, MaxWait: time.Second})
				if err != nil {
					b.Fatal(err)
				}
				done(150)
			}
		})
	}
}

// BenchmarkWaitConcurrent is one admitted call (no wait) and its done
// under a limit of calls in flight, on each store, with the system calls
// the File makes per call.
func BenchmarkWaitConcurrent(b *testing.B) {
	for _, name := range []string{"memory", "file"} {
		b.Run(name, func(b *testing.B) {
			var st Store = NewMemory()
			if name == "file" {
				f, err := NewFile(openStateB(b))
				if err != nil {
					b.Fatal(err)
				}
				defer f.Close()
				st = f
			}
			l := &Limiter{Store: st, Limits: []Limit{{Name: "conc", Concurrent: 64}}}
			ctx := context.Background()
			l.Wait(ctx, hook.Ask{Provider: "openai", Model: "gpt-4o", MaxWait: time.Second}) // the record made and mapped: one slot held throughout
			calls := state.Syscalls()
			b.ReportAllocs()
			for b.Loop() {
				_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "gpt-4o", MaxWait: time.Second})
				if err != nil {
					b.Fatal(err)
				}
				done(0)
			}
			b.ReportMetric(float64(state.Syscalls()-calls)/float64(b.N), "syscalls/op")
		})
	}
}

// BenchmarkWaitLearned is one call with no configured limit, admitted at
// once: under no learned bucket (the pause check alone), and under a
// learned bucket with room (a read of the pause and rate, and a
// reservation in it), on each store.
func BenchmarkWaitLearned(b *testing.B) {
	for _, name := range []string{"memory", "file"} {
		for _, learned := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/learned=%v", name, learned), func(b *testing.B) {
				var st Store = NewMemory()
				if name == "file" {
					f, err := NewFile(openStateB(b))
					if err != nil {
						b.Fatal(err)
					}
					defer f.Close()
					st = f
				}
				l := &Limiter{Store: st}
				if learned { // a bucket of 2^40 requests a second: always room
					st.Learn(PauseKey("openai", "gpt-4o"), Rate{Limit: 1 << 40, Per: time.Second, Burst: 1 << 40}, 0)
				}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "gpt-4o", BodyBytes: 400, MaxTokens: 100, MaxWait: time.Second})
					if err != nil {
						b.Fatal(err)
					}
					done(150)
				}
			})
		}
	}
}

// BenchmarkLearn is Learn told a 200 that pauses nothing: without
// rate-limit headers (the cost on every answer of a provider that sends
// none), and with OpenAI's and Anthropic's windows with room, read through
// the dialect.
func BenchmarkLearn(b *testing.B) {
	plain := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"}}
	room := func(kv ...string) http.Header {
		h := plain.Clone()
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	reset := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	for _, c := range []struct {
		name string
		d    dialect.Dialect
		h    http.Header
	}{
		{"plain", dialect.OpenAI, plain},
		{"openai", dialect.OpenAI, room("x-ratelimit-limit-requests", "10000", "x-ratelimit-remaining-requests", "9999", "x-ratelimit-reset-requests", "6ms",
			"x-ratelimit-limit-tokens", "1000000", "x-ratelimit-remaining-tokens", "999000", "x-ratelimit-reset-tokens", "60ms")},
		{"anthropic", dialect.Anthropic, room("anthropic-ratelimit-requests-limit", "4000", "anthropic-ratelimit-requests-remaining", "3999", "anthropic-ratelimit-requests-reset", reset,
			"anthropic-ratelimit-tokens-limit", "400000", "anthropic-ratelimit-tokens-remaining", "399000", "anthropic-ratelimit-tokens-reset", reset)},
	} {
		b.Run(c.name, func(b *testing.B) {
			l := &Limiter{Store: NewMemory()}
			b.ReportAllocs()
			for b.Loop() {
				l.Learn(hook.Answer{Dialect: c.d, Provider: "p", Model: "m", Status: http.StatusOK, Header: c.h})
			}
		})
	}
}
