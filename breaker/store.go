package breaker

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Store keeps the records of named breakers and applies events to them
// atomically. Implementations must be safe for concurrent use.
type Store interface {
	// Load returns the record of the breaker called name, the zero Record
	// (closed) if it has none. It is called on every attempt, so it must be
	// cheap: no lock held against writers, no write.
	Load(name string) (Record, error)
	// Apply atomically replaces name's record r by s.Next(r, e, now), now
	// being the store's clock, and returns r's state and the new record:
	// e changed the breaker's state exactly when the two states differ.
	// With an error, they still say what changed, if anything.
	Apply(name string, s Settings, e Event) (from State, to Record, err error)
	// List returns every breaker's record, by name.
	List() (map[string]Record, error)
}

// Memory is a Store for one process, safe for concurrent use. The zero
// value is an empty store, ready to use, as is NewMemory's. It keeps only
// what is worth keeping: a breaker whose record becomes idle (closed,
// nothing counted, no transition) is dropped, so a breaker that only ever
// saw successes takes no memory.
type Memory struct {
	m sync.Map // name → *memEntry
}

type memEntry struct {
	mu   sync.Mutex // serialises Apply
	rec  atomic.Pointer[Record]
	dead bool // dropped from the map: look the name up again
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{} }

// Load returns name's record without locking.
func (m *Memory) Load(name string) (Record, error) {
	v, ok := m.m.Load(name)
	if !ok {
		return Record{}, nil
	}
	if r := v.(*memEntry).rec.Load(); r != nil {
		return *r, nil
	}
	return Record{}, nil
}

// Apply applies e to name's record under the entry's lock. A record that
// becomes idle is dropped.
func (m *Memory) Apply(name string, s Settings, e Event) (State, Record, error) {
	for {
		v, ok := m.m.Load(name)
		if !ok {
			v, _ = m.m.LoadOrStore(name, &memEntry{})
		}
		ent := v.(*memEntry)
		ent.mu.Lock()
		if ent.dead {
			ent.mu.Unlock()
			continue
		}
		var cur Record
		if r := ent.rec.Load(); r != nil {
			cur = *r
		}
		next := s.Next(cur, e, time.Now())
		if next.Idle() {
			ent.dead = true
			ent.rec.Store(nil)
			m.m.CompareAndDelete(name, ent)
		} else {
			ent.rec.Store(&next)
		}
		ent.mu.Unlock()
		return cur.State, next, nil
	}
}

// List returns every record, by name.
func (m *Memory) List() (map[string]Record, error) {
	out := make(map[string]Record)
	m.m.Range(func(k, v any) bool {
		if r := v.(*memEntry).rec.Load(); r != nil {
			out[k.(string)] = *r
		}
		return true
	})
	return out, nil
}

// Names returns the names in a list, sorted.
func Names(list map[string]Record) []string {
	names := make([]string, 0, len(list))
	for n := range list {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
