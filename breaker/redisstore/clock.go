package redisstore

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

// clock converts Redis-clock times into local-clock times. The offset
// between the two is measured at every round trip: the Redis time was
// read somewhere between the local send and receive times, so the
// midpoint is wrong by at most half the round trip.
type clock struct {
	now    func() time.Time
	offset atomic.Int64 // local ns − Redis ns

	mu  sync.Mutex
	rtt time.Duration // round trip of the sample in use
	at  time.Time     // when that sample was taken
}

// sampleAge is how long a sample with a short round trip is preferred
// over later ones with longer round trips.
const sampleAge = 10 * time.Second

// observe takes one sample: Redis read its clock as redisMicros between
// the local times sent and recv.
func (c *clock) observe(sent, recv time.Time, redisMicros int64) {
	rtt := recv.Sub(sent)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && rtt > c.rtt+time.Millisecond && recv.Sub(c.at) < sampleAge {
		return // a noisier sample than the one in use
	}
	mid := sent.UnixNano() + int64(rtt)/2
	c.offset.Store(mid - redisMicros*int64(time.Microsecond))
	c.rtt, c.at = rtt, recv
}

// local converts a Redis time in µs to a local time in Unix ns; 0 (no
// time) stays 0.
func (c *clock) local(redisMicros int64) int64 {
	if redisMicros == 0 {
		return 0
	}
	return redisMicros*int64(time.Microsecond) + c.offset.Load()
}

// toLocal returns r with its times converted to the local clock.
func (c *clock) toLocal(r breaker.Record) breaker.Record {
	r.Until, r.Changed = c.local(r.Until), c.local(r.Changed)
	if len(r.Slow) > 0 {
		slow := make([]int64, len(r.Slow))
		for i, t := range r.Slow {
			slow[i] = c.local(t)
		}
		r.Slow = slow
	}
	return r
}

// redisMillis returns the Redis time now, in ms, as the last sample
// estimates it.
func (c *clock) redisMillis() int64 {
	return (c.now().UnixNano() - c.offset.Load()) / int64(time.Millisecond)
}
