package state

import (
	"fmt"
	"sync"
	"testing"
)

func memoryNames(m *Memory) (records int) {
	m.m.Range(func(any, any) bool { records++; return true })
	return records
}

// A zero Memory works for every method, as NewMemory's does.
func TestZeroMemoryUsable(t *testing.T) {
	var m Memory
	if err := m.Transform("spend", func(old []byte) ([]byte, error) {
		return append(old, 'x'), nil
	}); err != nil {
		t.Fatal(err)
	}
	if got, err := m.Snapshot("spend"); string(got) != "x" || err != nil {
		t.Fatalf("Snapshot = %q, %v; want \"x\"", got, err)
	}
	n, err := m.RemoveRecords(func(name string, rec []byte) bool { return name == "spend" && string(rec) == "x" })
	if err != nil || n != 1 {
		t.Fatalf("RemoveRecords = %d, %v; want 1 record dropped", n, err)
	}
	if got, err := m.Snapshot("spend"); got != nil || err != nil {
		t.Fatalf("Snapshot after removal = %q, %v; want nothing", got, err)
	}
}

func TestMemoryDropsEmptyRecords(t *testing.T) {
	m := NewMemory()
	for i := range 10000 {
		m.Transform(fmt.Sprint("k", i), func([]byte) ([]byte, error) { return []byte("x"), nil })
		m.Transform(fmt.Sprint("k", i), func([]byte) ([]byte, error) { return nil, nil })
	}
	if r := memoryNames(m); r != 0 {
		t.Fatalf("memory keeps %d records, want none", r)
	}
}

func TestMemoryDropRacesNoLostUpdate(t *testing.T) {
	m := NewMemory()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 500 {
				m.Transform("k", func(old []byte) ([]byte, error) { return append(old, 'x'), nil })
				m.Transform("k", func(old []byte) ([]byte, error) { return old[:len(old)-1], nil })
			}
		})
	}
	wg.Wait()
	m.Transform("k", func(old []byte) ([]byte, error) {
		if len(old) != 0 {
			t.Errorf("after balanced adds and removals the record holds %q, want nothing", old)
		}
		return old, nil
	})
	n, _ := m.RemoveRecords(func(string, []byte) bool { return true })
	if r := memoryNames(m); r != 0 || n != 0 {
		t.Fatalf("%d records left, %d swept; want none", r, n)
	}
}
