package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/idempotency/storetest"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// newStore returns a store of srv over a client of its own, bounded by
// opts.Timeout (5s when zero: a busy machine).
func newStore(t *testing.T, srv *redistest.Server, opts Options) *Store {
	t.Helper()
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	ro, err := redis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = opts.Timeout, opts.Timeout, opts.Timeout
	ro.ContextTimeoutEnabled = true
	ro.MaxRetries = -1
	c := redis.NewClient(ro)
	t.Cleanup(func() { c.Close() })
	return New(c, opts)
}

func TestContract(t *testing.T) {
	srv := redistest.Start(t)
	storetest.Run(t, func(t *testing.T, maxAnswer int64) (idempotency.Store, storetest.Clock) {
		srv.Client().FlushAll(context.Background())
		return newStore(t, srv, Options{MaxAnswer: maxAnswer}), storetest.RealClock{}
	}, 100*time.Millisecond)
}

// TestKeysHaveTTLsSlotsAndNoSecret: every key the store writes has a TTL,
// an ID's keys share one hash tag, and no key or value holds a credential
// put in the answer's headers, the caller or the query.
func TestKeysHaveTTLsSlotsAndNoSecret(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Options{})
	ctx := context.Background()
	key := idempotency.Key{Scope: "openai", Caller: storetest.Secret, Value: "job-" + storetest.Secret}
	fp := idempotency.Fingerprint("POST", "/v1/x", map[string][]string{"key": {storetest.Secret}}, []byte("{}"))
	now := time.Now()
	r, err := s.Begin(key.ID(), fp, time.Minute, now)
	if err != nil || r.Verdict != idempotency.Run {
		t.Fatal(r.Verdict, err)
	}
	if _, err := s.Begin(storetest.ID("in-flight"), fp, time.Minute, now); err != nil {
		t.Fatal(err)
	}
	if err := s.Keep(r.Mark, storetest.SampleAnswer("body"), time.Hour, now); err != nil {
		t.Fatal(err)
	}
	keys, err := srv.Client().Keys(ctx, "*").Result()
	if err != nil || len(keys) != 2 {
		t.Fatalf("keys %v (%v), want an answer and a mark", keys, err)
	}
	for _, k := range keys {
		v, _ := srv.Client().Get(ctx, k).Result()
		if strings.Contains(k, storetest.Secret) || strings.Contains(v, storetest.Secret) {
			t.Errorf("%s holds the secret", k)
		}
		ttl, _ := srv.Client().PTTL(ctx, k).Result()
		if ttl <= 0 {
			t.Errorf("%s has no TTL (%v)", k, ttl)
		}
	}
	ks := s.keys(key.ID())
	tag := "{" + key.ID() + "}"
	if !strings.Contains(ks[0], tag) || !strings.Contains(ks[1], tag) || strings.Count(ks[0], "{") != 1 {
		t.Errorf("keys %v do not share the one hash tag %s", ks, tag)
	}
}

// TestOneRunAcrossHosts: 16 Begins through two clients (two hosts): one
// runs; a duplicate waiting through the other client replays its answer.
func TestOneRunAcrossHosts(t *testing.T) {
	srv := redistest.Start(t)
	stores := []*Store{newStore(t, srv, Options{}), newStore(t, srv, Options{})}
	id, fp := storetest.ID("j"), storetest.FP("x")
	var mu sync.Mutex
	var runs []idempotency.Mark
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			r, err := stores[i%2].Begin(id, fp, time.Minute, time.Now())
			if err != nil {
				t.Error(err)
				return
			}
			if r.Verdict == idempotency.Run {
				mu.Lock()
				runs = append(runs, r.Mark)
				mu.Unlock()
			} else if r.Verdict != idempotency.InFlight {
				t.Errorf("verdict %v", r.Verdict)
			}
		})
	}
	wg.Wait()
	if len(runs) != 1 {
		t.Fatalf("%d runs, want 1", len(runs))
	}
	done := make(chan idempotency.Result)
	go func() {
		r, err := idempotency.Wait(context.Background(), stores[1], id, fp, time.Minute, 20*time.Second)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	if err := stores[0].Keep(runs[0], storetest.SampleAnswer("joined"), time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.Verdict != idempotency.Replay || string(r.Answer.Body) != "joined" {
			t.Fatalf("the waiting duplicate: %v", r.Verdict)
		}
	case <-time.After(25 * time.Second):
		t.Fatal("the waiting duplicate did not return")
	}
}

// TestFailsWhenRedisIsDown: with Redis gone every call fails within its
// timeout, so the caller can run undeduplicated.
func TestFailsWhenRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	s := newStore(t, srv, Options{Timeout: 100 * time.Millisecond})
	srv.Kill()
	start := time.Now()
	_, err := s.Begin(storetest.ID("j"), storetest.FP("x"), time.Minute, time.Now())
	if err == nil {
		t.Fatal("Begin succeeded with Redis down")
	}
	if err := s.Keep(idempotency.Mark{ID: storetest.ID("j"), Token: "t"}, storetest.SampleAnswer("x"), time.Hour, time.Now()); err == nil || errors.Is(err, idempotency.ErrMarkLost) {
		t.Errorf("Keep with Redis down: %v, want a store error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v, want about two 100ms timeouts (+3s for a busy machine)", d)
	}
}
