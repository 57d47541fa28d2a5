//go:build linux

package limit

import (
	"context"
	"fmt"
	"testing"
	"time"

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
				_, done, err := l.Wait(ctx, nil, "openai", "gpt-4o", 400, 100, time.Second)
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
			l.Wait(ctx, nil, "openai", "gpt-4o", 0, 0, time.Second) // the record made and mapped: one slot held throughout
			calls := state.Syscalls()
			b.ReportAllocs()
			for b.Loop() {
				_, done, err := l.Wait(ctx, nil, "openai", "gpt-4o", 0, 0, time.Second)
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
					_, done, err := l.Wait(ctx, nil, "openai", "gpt-4o", 400, 100, time.Second)
					if err != nil {
						b.Fatal(err)
					}
					done(150)
				}
			})
		}
	}
}
