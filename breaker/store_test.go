package breaker

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func memoryNames(m *Memory) (breakers, records int) {
	m.m.Range(func(any, any) bool { breakers++; return true })
	m.blobs.Range(func(any, any) bool { records++; return true })
	return breakers, records
}

func TestMemoryDropsIdleBreakersAndEmptyRecords(t *testing.T) {
	m := NewMemory()
	s := Settings{Failures: 3, Cool: time.Hour}
	for i := range 10000 {
		b := New(fmt.Sprint("model-", i), s, m)
		p, _ := b.Allow()
		p.Done(Success, 0)
		if i%100 == 0 {
			p, _ = b.Allow()
			p.Done(Failure, 0)
			p, _ = b.Allow()
			p.Done(Success, 0)
		}
		if i%1000 == 1 {
			m.Apply(b.Name(), s, Event{Kind: EventTrip})
		}
		m.Transform(fmt.Sprint("k", i), func([]byte) ([]byte, error) { return []byte("x"), nil })
		m.Transform(fmt.Sprint("k", i), func([]byte) ([]byte, error) { return nil, nil })
	}
	if b, r := memoryNames(m); b != 10 || r != 0 {
		t.Fatalf("memory keeps %d breakers and %d records, want the 10 open breakers and no record", b, r)
	}
	if got, _ := m.Load("model-1"); got.State != Open {
		t.Fatalf("open breaker reads %+v", got)
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
	if _, r := memoryNames(m); r != 0 || n != 0 {
		t.Fatalf("%d records left, %d swept; want none", r, n)
	}
}
