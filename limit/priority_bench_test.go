//go:build linux

package limit

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
)

// BenchmarkWaitPriority is one call admitted at once under a request and
// a token limit and a limit of calls in flight, on each store: "none"
// carries no priority (as every call did before priorities), "interactive"
// and "batch" carry theirs, and "batch-reserve" is a Batch call under
// limits that reserve 20% (a reservation in each share's bucket too).
// Priorities must cost a call admitted at once at most 1.1× what it cost
// without.
func BenchmarkWaitPriority(b *testing.B) {
	for _, name := range []string{"memory", "file"} {
		for _, leg := range []string{"none", "interactive", "batch", "batch-reserve"} {
			b.Run(name+"/"+leg, func(b *testing.B) {
				var st Store = NewMemory()
				if name == "file" {
					f, err := NewFile(openStateB(b))
					if err != nil {
						b.Fatal(err)
					}
					defer f.Close()
					st = f
				}
				limits := []Limit{{Name: "rpm", Requests: Rate{Limit: 1 << 40, Per: time.Second}, Tokens: Rate{Limit: 1 << 50, Per: time.Second}, Concurrent: 64}}
				if leg == "batch-reserve" {
					limits[0].Reserve = 0.2
				}
				l := &Limiter{Store: st, Limits: limits}
				ctx := context.Background()
				var caller hook.Caller
				switch leg {
				case "interactive":
					caller.Priority = Interactive
				case "batch", "batch-reserve":
					caller.Priority = Batch
				}
				l.Wait(ctx, hook.Ask{Caller: caller, Provider: "openai", Model: "gpt-4o", MaxWait: time.Second}) // the records made and mapped: one slot held throughout
				b.ReportAllocs()
				for b.Loop() {
					_, done, err := l.Wait(ctx, hook.Ask{Caller: caller, Provider: "openai", Model: "gpt-4o", BodyBytes: 400, MaxTokens: 100, MaxWait: time.Second})
					if err != nil {
						b.Fatal(err)
					}
					done(150)
				}
			})
		}
	}
}
