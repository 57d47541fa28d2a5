//go:build linux

package limit

import (
	"context"
	"testing"
	"time"
)

// BenchmarkWait is one admitted call (no wait) under a request and a token
// limit, on each store.
func BenchmarkWait(b *testing.B) {
	limits := []Limit{{Name: "rpm", Requests: Rate{1 << 40, time.Second}}, {Name: "tpm", Tokens: Rate{1 << 50, time.Second}}}
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
