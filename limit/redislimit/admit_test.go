package redislimit

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
)

// roundTrips counts a go-redis client's round trips: one per command sent
// alone, one per pipeline (a Cluster client's, split by node and sent at
// once, counts once).
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// hooked is a go-redis client that a roundTrips hook can be added to.
type hooked interface {
	redis.UniversalClient
}

// An Interactive call admitted in steady state costs one round trip to
// Redis, whatever it falls under: the pause read, the learned bucket, a
// requests and a tokens bucket, and two concurrency limits, all in one
// pipeline; its end one per concurrency limit (each lease given back by a
// ZREM of its own). Against one server
// and against a three-master Cluster, where the keys are on different
// slots and go-redis sends the pipeline's parts to their nodes at once.
// It goes red if admission is split into round trips again.
func TestAdmissionIsOneRoundTrip(t *testing.T) {
	t.Run("single", func(t *testing.T) {
		srv := redistest.Start(t)
		c := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		t.Cleanup(func() { c.Close() })
		admitOnce(t, c)
	})
	t.Run("cluster", func(t *testing.T) {
		if testing.Short() {
			t.Skip("a three-master cluster")
		}
		cl := redistest.StartCluster(t, 3)
		admitOnce(t, cl.ClusterClient(t))
	})
}

func admitOnce(t *testing.T, c hooked) {
	t.Helper()
	s, err := New(c, Options{})
	if err != nil {
		t.Fatal(err)
	}
	l := &limit.Limiter{Store: s, Limits: []limit.Limit{
		{Name: "rate", Requests: limit.Rate{Limit: 1e6, Per: time.Minute}, Tokens: limit.Rate{Limit: 1e9, Per: time.Minute}},
		{Name: "conc", Concurrent: 4},
		{Name: "all", Scope: "all", Concurrent: 8},
	}, OnError: func(err error) { t.Errorf("store error: %v", err) }}
	pause := limit.PauseKey("openai", "m")
	if err := s.Learn(pause, limit.Rate{Limit: 1e6, Per: time.Minute}, 0); err != nil {
		t.Fatal(err)
	}
	rt := &roundTrips{}
	c.AddHook(rt)
	call := func() (admit, end int64) {
		t.Helper()
		n := rt.n.Load()
		waited, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", BodyBytes: 400, MaxTokens: 100, MaxWait: time.Second})
		if err != nil || waited != 0 {
			t.Fatalf("Wait: %v after %v", err, waited)
		}
		admit = rt.n.Load() - n
		if got, err := s.InFlight("limit:conc:openai:concurrent"); err != nil || got != 1 {
			t.Fatalf("in flight %d, %v: want the call's slot", got, err)
		}
		n = rt.n.Load()
		done(0)
		return admit, rt.n.Load() - n
	}
	call() // the scripts loaded, the learned rate seen
	for i := range 5 {
		if admit, end := call(); admit != 1 || end != 2 {
			t.Fatalf("call %d: %d round trips to admit, %d to end; want 1 and 2", i, admit, end)
		}
	}
}

// What one round trip cannot admit goes the usual way: a pause holds the
// call, a learned rate that changed is reserved in at once, a full
// concurrency limit queues the call, and a script flushed from Redis is
// sent again whole.
func TestAdmissionFallsBack(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv)
	l := &limit.Limiter{Store: s, Limits: []limit.Limit{{Name: "conc", Concurrent: 1}}}
	wait := func(maxWait time.Duration) (time.Duration, func(int64), error) {
		return l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: maxWait})
	}
	_, done, err := wait(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	done(0)

	pause := limit.PauseKey("openai", "m")
	s.Pause(pause, time.Now().Add(150*time.Millisecond))
	waited, done, err := wait(time.Second)
	if err != nil || waited < 100*time.Millisecond {
		t.Fatalf("paused: waited %v, %v; want the pause", waited, err)
	}
	done(0)

	s.Learn(pause, limit.Rate{Limit: 1, Per: time.Hour}, 0) // one call an hour: this one
	if _, done, err = wait(time.Second); err != nil {
		t.Fatalf("first under the learned rate: %v", err)
	}
	done(0)
	var e *limit.Error
	if _, _, err = wait(time.Second); !errors.As(err, &e) || e.Limit != "pause" {
		t.Fatalf("second under the learned rate: %v; want refused by the pause key", err)
	}
	s.Learn(pause, limit.Rate{Limit: 1e6, Per: time.Minute}, 0)

	srv.Client().ScriptFlush(context.Background())
	_, done, err = wait(time.Second)
	if err != nil {
		t.Fatalf("after SCRIPT FLUSH: %v", err)
	}
	go func() { time.Sleep(100 * time.Millisecond); done(0) }()
	waited, done, err = wait(time.Second) // queued for the one slot
	if err != nil || waited < 50*time.Millisecond {
		t.Fatalf("full: waited %v, %v; want a wait for the slot", waited, err)
	}
	done(0)
	if n, _ := s.InFlight("limit:conc:openai:concurrent"); n != 0 {
		t.Fatalf("%d slots held after every call ended", n)
	}
}
