package sluice

import "sync"

// memoryRecords keeps the records of the default ledger in this process:
// what state.Memory does, here so that the engine does not depend on
// package state. The zero value is empty and ready to use. A record
// transformed to nothing is dropped.
type memoryRecords struct {
	m sync.Map // name → *memoryRecord
}

type memoryRecord struct {
	mu   sync.Mutex
	data []byte
	dead bool // dropped from the map: look the name up again
}

// Transform atomically replaces the record called name by fn(old), where
// old is nil when there is none.
func (m *memoryRecords) Transform(name string, fn func(old []byte) ([]byte, error)) error {
	for {
		v, _ := m.m.LoadOrStore(name, &memoryRecord{})
		r := v.(*memoryRecord)
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

// RemoveRecords drops every record for which drop, shown its name and
// bytes under its lock, returns true, and returns how many it dropped.
func (m *memoryRecords) RemoveRecords(drop func(name string, rec []byte) bool) (int, error) {
	n := 0
	m.m.Range(func(k, v any) bool {
		r := v.(*memoryRecord)
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
