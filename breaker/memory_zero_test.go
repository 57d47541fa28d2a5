package breaker

import (
	"testing"
	"time"
)

// A zero Memory works for every method, as NewMemory's does.
func TestZeroMemoryUsable(t *testing.T) {
	var m Memory
	if r, err := m.Load("p"); err != nil || r.State != Closed {
		t.Fatalf("Load on zero Memory = %+v, %v", r, err)
	}
	b := New("p", Settings{Failures: 2, Cool: time.Hour}, &m)
	fail(t, b, 2)
	if got := state(t, b); got != Open {
		t.Fatalf("state after 2 failures = %s, want open", got)
	}
	list, err := m.List()
	if err != nil || len(list) != 1 || list["p"].State != Open {
		t.Fatalf("List = %v, %v; want p open", list, err)
	}
	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := state(t, b); got != Closed {
		t.Fatalf("state after Reset = %s, want closed", got)
	}
}
