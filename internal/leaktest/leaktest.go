// Package leaktest checks that a test leaves no goroutine behind.
package leaktest

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Check fails the test if, after cleanup, goroutines started during it are
// still running (it waits up to 3 s for them to end). Call it first in a
// test; it registers itself.
func Check(t testing.TB) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("%d goroutines leaked (before %d, after %d):\n%s", n-before, before, n, trimStacks(string(buf)))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func trimStacks(s string) string {
	if len(s) > 8000 {
		s = s[:8000] + "\n…"
	}
	return strings.TrimSpace(s)
}
