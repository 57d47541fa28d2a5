//go:build unix

package redislimit

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
)

// A Redis that hangs (SIGSTOP) costs the calls under a limit one timeout
// a second, not one each: after the first call's timeout the Limiter keeps
// to its own memory for a while, and every call is admitted meanwhile.
// Once Redis answers again, the limits are shared again.
func TestFrozenRedisCostsOneTimeoutASecond(t *testing.T) {
	srv := redistest.Start(t)
	// A client bounded as the gateway's is: every wait within 100 ms.
	opts, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opts.ContextTimeoutEnabled, opts.MaxRetries = true, -1
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.PoolTimeout = 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	st, err := New(client, Options{Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var errs atomic.Int64
	l := &limit.Limiter{Store: st, Limits: []limit.Limit{{Name: "conc", Concurrent: 8}},
		OnError: func(error) { errs.Add(1) }}
	call := func() {
		t.Helper()
		_, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Second})
		if err != nil {
			t.Fatalf("a call under a frozen Redis: %v, want it admitted", err)
		}
		done(0)
	}
	call() // the script is loaded, the connection made
	srv.Freeze()
	thawed := false
	defer func() {
		if !thawed {
			srv.Thaw()
		}
	}()
	const calls = 30
	start := time.Now()
	for range calls {
		call()
	}
	elapsed := time.Since(start)
	t.Logf("%d calls under a frozen Redis in %v: %d timeouts", calls, elapsed, errs.Load())
	srv.Thaw()
	thawed = true
	// Without the rest each call would wait for a timeout: 30 of them.
	// With it, one a second: the first, and one more per second the loop
	// took (and a Release may time out too).
	if n, most := errs.Load(), 2*(int64(elapsed/time.Second)+1); n > most {
		t.Errorf("%d calls in %v under a frozen Redis met %d timeouts, want at most %d (one a second)", calls, elapsed, n, most)
	}
	time.Sleep(1100 * time.Millisecond) // past the rest
	before := srv.CommandsProcessed()
	call()
	if srv.CommandsProcessed() == before+1 { // the INFO that counts is one command
		t.Error("once Redis answers again, a call did not ask it")
	}
}
