package breaker

import (
	"fmt"
	"testing"
	"time"
)

func memoryNames(m *Memory) (breakers int) {
	m.m.Range(func(any, any) bool { breakers++; return true })
	return breakers
}

func TestMemoryDropsIdleBreakers(t *testing.T) {
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
	}
	if b := memoryNames(m); b != 10 {
		t.Fatalf("memory keeps %d breakers, want the 10 open breakers", b)
	}
	if got, _ := m.Load("model-1"); got.State != Open {
		t.Fatalf("open breaker reads %+v", got)
	}
}
