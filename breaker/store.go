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
	// being the store's clock, and returns the new record.
	Apply(name string, s Settings, e Event) (Record, error)
	// List returns every breaker's record, by name.
	List() (map[string]Record, error)
}

// Memory is a Store for one process. The zero value is not usable; call
// NewMemory.
type Memory struct {
	m     sync.Map // name → *memEntry
	blobs sync.Map // name → *memBlob, for Transform
}

type memEntry struct {
	mu  sync.Mutex // serialises Apply
	rec atomic.Pointer[Record]
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

// Apply applies e to name's record under the entry's lock.
func (m *Memory) Apply(name string, s Settings, e Event) (Record, error) {
	v, ok := m.m.Load(name)
	if !ok {
		v, _ = m.m.LoadOrStore(name, &memEntry{})
	}
	ent := v.(*memEntry)
	ent.mu.Lock()
	defer ent.mu.Unlock()
	var cur Record
	if r := ent.rec.Load(); r != nil {
		cur = *r
	}
	next := s.Next(cur, e, time.Now())
	ent.rec.Store(&next)
	return next, nil
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

// Transform atomically replaces the opaque record called name by
// fn(old), where old is nil when there is none. It is the read-modify-write
// that the spend ledger keeps its records with; records live apart from
// breakers.
func (m *Memory) Transform(name string, fn func(old []byte) ([]byte, error)) error {
	v, _ := m.blobs.LoadOrStore(name, &memBlob{})
	b := v.(*memBlob)
	b.mu.Lock()
	defer b.mu.Unlock()
	next, err := fn(b.data)
	if err != nil {
		return err
	}
	b.data = append([]byte(nil), next...)
	return nil
}

type memBlob struct {
	mu   sync.Mutex
	data []byte
}
