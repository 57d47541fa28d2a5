package redislimit

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
)

// TestPaceSharedOnCluster: two gateways' Limiters on one Redis Cluster,
// each through its own client: the pace a 429 teaches one of them, for
// models whose keys fall on every node, holds the other's calls to it —
// its second call to a model waits the pace's interval.
func TestPaceSharedOnCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	newLimiter := func() *limit.Limiter {
		st, err := New(c.ClusterClient(t), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return &limit.Limiter{Store: st}
	}
	a, b := newLimiter(), newLimiter()
	sent := time.Now()
	for i := range 12 {
		a.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "p", Model: "m" + strconv.Itoa(i), Sent: sent, Status: http.StatusTooManyRequests})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i := range 12 {
		model := "m" + strconv.Itoa(i)
		wg.Go(func() {
			if _, _, err := b.Wait(ctx, hook.Ask{Provider: "p", Model: model, MaxWait: 5 * time.Second}); err != nil {
				t.Error(err)
				return
			}
			start := time.Now()
			if _, _, err := b.Wait(ctx, hook.Ask{Provider: "p", Model: model, MaxWait: 5 * time.Second}); err != nil {
				t.Error(err)
				return
			}
			// Nothing known but a 429 without Retry-After: one call a second.
			if d := time.Since(start); d < 900*time.Millisecond {
				t.Errorf("model %s: the other gateway's second call waited %v, want the learned second", model, d)
			}
		})
	}
	wg.Wait()
}
