package keypool

import (
	"context"
	"math"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/limit"
)

// keyBucket is a provider's limit of one key: a token bucket of burst
// requests refilled at rate a second, started full, that tells nothing
// but a 429's Retry-After (as Bedrock and Vertex AI do).
type keyBucket struct {
	mu          sync.Mutex
	rate, level float64
	burst       float64
	at          time.Time
	ok, limited int
}

func (b *keyBucket) call() (int, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	b.level = min(b.burst, b.level+now.Sub(b.at).Seconds()*b.rate)
	b.at = now
	if b.level >= 1 {
		b.level--
		b.ok++
		return http.StatusOK, 0
	}
	b.limited++
	return http.StatusTooManyRequests, max(time.Duration(math.Ceil((1-b.level)/b.rate))*time.Second, time.Second)
}

// TestKeyPoolPacedStorm: 50 agents in closed loops on a pool of two keys,
// each key limited by its provider to 2 calls a second in bursts of 10,
// told only by Retry-After: the 429s teach each key's pace, and over 60 s
// of fake time at most 10 calls are refused per key and 90% of what the
// provider allows is served.
func TestKeyPoolPacedStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := testPool(t, 1, 1)
		buckets := []*keyBucket{{rate: 2, burst: 10, level: 10, at: time.Now()}, {rate: 2, burst: 10, level: 10, at: time.Now()}}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		for a := range 50 {
			latency := 300*time.Millisecond + time.Duration(a)*3*time.Millisecond
			wg.Go(func() {
				for ctx.Err() == nil {
					i, err := p.take(ctx, "m", limit.Interactive, time.Minute)
					if err != nil {
						return
					}
					sent := time.Now()
					status, ra := buckets[i].call()
					if status == http.StatusOK {
						time.Sleep(latency)
					}
					p.learn(i, hook.Answer{Model: "m", Sent: sent, Status: status, Quota: false, Header: http.Header{}, RetryAfter: ra})
				}
			})
		}
		wg.Wait()
		for i, b := range buckets {
			allowed := 10 + 2*60
			t.Logf("key %c: %d 429s, %d of %d allowed served", 'A'+i, b.limited, b.ok, allowed)
			if b.limited > 10 || b.ok < allowed*9/10 {
				t.Errorf("key %c: %d 429s and %d of %d allowed served; want ≤ 10 and ≥ 90%%", 'A'+i, b.limited, b.ok, allowed)
			}
		}
	})
}
