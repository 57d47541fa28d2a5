package redisstore

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/idempotency/storetest"
	"github.com/sluice-llm/sluice/internal/redistest"
)

func benchStore(b *testing.B) *Store {
	srv := redistest.Start(b)
	ro, err := redis.ParseURL(srv.URL())
	if err != nil {
		b.Fatal(err)
	}
	c := redis.NewClient(ro)
	b.Cleanup(func() { c.Close() })
	return New(c, Options{})
}

func benchAnswer() *idempotency.Answer {
	a := storetest.SampleAnswer(string(make([]byte, 1024)))
	a.Stream = false
	return a
}

// BenchmarkRedisBeginKeep is a call with a key not yet kept: Begin takes
// the mark, Keep keeps a 1 KiB answer (two scripts, two round trips).
func BenchmarkRedisBeginKeep(b *testing.B) {
	s := benchStore(b)
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = storetest.ID(fmt.Sprint("bench-", i))
	}
	fp, a, now := storetest.FP("x"), benchAnswer(), time.Now()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		r, err := s.Begin(ids[i], fp, time.Minute, now)
		if err != nil || r.Verdict != idempotency.Run {
			b.Fatal(r.Verdict, err)
		}
		if err := s.Keep(r.Mark, a, time.Hour, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRedisReplay is a duplicate of a kept 1 KiB answer: one script.
func BenchmarkRedisReplay(b *testing.B) {
	s := benchStore(b)
	id, fp, now := storetest.ID("replayed"), storetest.FP("x"), time.Now()
	r, _ := s.Begin(id, fp, time.Minute, now)
	if err := s.Keep(r.Mark, benchAnswer(), time.Hour, now); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		r, err := s.Begin(id, fp, time.Minute, now)
		if err != nil || r.Verdict != idempotency.Replay {
			b.Fatal(r.Verdict, err)
		}
	}
}
