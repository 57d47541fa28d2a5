package state

import "sync"

// Memory keeps small named records in one process: the in-process twin of
// a File's records, for what needs no sharing between processes. It is
// safe for concurrent use, and the zero value is an empty store, ready to
// use, as is NewMemory's. A record transformed to nothing is dropped, so
// it takes no memory.
type Memory struct {
	m sync.Map // name → *memRecord
}

type memRecord struct {
	mu   sync.Mutex
	data []byte
	dead bool // dropped from the map: look the name up again
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{} }

// Transform atomically replaces the record called name by fn(old), where
// old is nil when there is none. A record transformed to nothing (nil or
// empty) is dropped. If fn returns an error, the record is left as it was
// and Transform returns that error.
func (m *Memory) Transform(name string, fn func(old []byte) ([]byte, error)) error {
	for {
		v, _ := m.m.LoadOrStore(name, &memRecord{})
		r := v.(*memRecord)
		r.mu.Lock()
		if r.dead {
			r.mu.Unlock()
			continue
		}
		next, err := fn(r.data)
		if err == nil {
			r.data = append([]byte(nil), next...)
			if len(next) == 0 {
				r.dead = true
				m.m.CompareAndDelete(name, r)
			}
		}
		r.mu.Unlock()
		return err
	}
}

// Snapshot returns a copy of the record called name; nil if there is none.
func (m *Memory) Snapshot(name string) ([]byte, error) {
	v, ok := m.m.Load(name)
	if !ok {
		return nil, nil
	}
	r := v.(*memRecord)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dead || len(r.data) == 0 {
		return nil, nil
	}
	return append([]byte(nil), r.data...), nil
}

// RemoveRecords drops every record for which drop, shown its name and
// bytes under its lock, returns true, and returns how many it dropped.
func (m *Memory) RemoveRecords(drop func(name string, rec []byte) bool) (int, error) {
	n := 0
	m.m.Range(func(k, v any) bool {
		r := v.(*memRecord)
		r.mu.Lock()
		defer r.mu.Unlock()
		if !r.dead && drop(k.(string), r.data) {
			r.dead = true
			m.m.CompareAndDelete(k, r)
			n++
		}
		return true
	})
	return n, nil
}
