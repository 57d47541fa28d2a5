package keypool

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/limit"
)

// While every key of a pool is paused, the calls wait; when a key is
// ready again, the interactive calls that waited take it first, and the
// batch calls that waited before them after, at the key's pace.
func TestKeyPoolInteractiveFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1)
		p.learn(0, hook.Answer{Model: "m", Sent: time.Now(), Status: 429, Quota: false, Header: http.Header{}, RetryAfter: time.Second})
		start := time.Now()
		var mu sync.Mutex
		at := map[string]time.Duration{}
		var order []string
		var wg sync.WaitGroup
		for _, c := range []struct {
			name string
			p    limit.Priority
		}{{"batch", limit.Batch}, {"interactive", limit.Interactive}} {
			wg.Go(func() {
				if _, err := p.take(context.Background(), "m", c.p, 10*time.Second); err != nil {
					t.Error(c.name, err)
				}
				mu.Lock()
				at[c.name] = time.Since(start)
				order = append(order, c.name)
				mu.Unlock()
			})
			time.Sleep(100 * time.Millisecond) // the batch call waits first
		}
		wg.Wait()
		// The 429 taught the key's pace too, one call a second: the batch
		// call leaves one second after the interactive one.
		if len(order) != 2 || order[0] != "interactive" || at["interactive"] != time.Second || at["batch"] != 2*time.Second {
			t.Errorf("taken in the order %v at %v, want the interactive call's first, at 1s, and the batch call's at 2s", order, at)
		}
		if n := p.interactive.Load(); n != 0 {
			t.Errorf("%d interactive calls counted waiting after all took a key", n)
		}
	})
}
