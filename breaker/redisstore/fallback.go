package redisstore

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

// fallback holds the local breakers used while Redis is unreachable. A
// breaker starts from the last shared record the store saw.
type fallback struct {
	m    sync.Map // name → *localEntry
	seed func(name string) breaker.Record
}

type localEntry struct {
	mu  sync.Mutex // serialises apply
	rec atomic.Pointer[breaker.Record]
}

func (f *fallback) load(name string) breaker.Record {
	if v, ok := f.m.Load(name); ok {
		return *v.(*localEntry).rec.Load()
	}
	return f.seed(name)
}

// apply applies e to name's local breaker, and returns the state it was
// in and its new record.
func (f *fallback) apply(name string, s breaker.Settings, e breaker.Event, now time.Time) (breaker.State, breaker.Record) {
	v, ok := f.m.Load(name)
	if !ok {
		le := &localEntry{}
		r := f.seed(name)
		le.rec.Store(&r)
		v, _ = f.m.LoadOrStore(name, le)
	}
	le := v.(*localEntry)
	le.mu.Lock()
	defer le.mu.Unlock()
	cur := *le.rec.Load()
	next := s.Next(cur, e, now)
	le.rec.Store(&next)
	return cur.State, next
}

// list returns the records of the names given and of every local breaker.
func (f *fallback) list(names []string) map[string]breaker.Record {
	out := make(map[string]breaker.Record)
	for _, n := range names {
		out[n] = f.load(n)
	}
	f.m.Range(func(k, v any) bool {
		out[k.(string)] = *v.(*localEntry).rec.Load()
		return true
	})
	return out
}
