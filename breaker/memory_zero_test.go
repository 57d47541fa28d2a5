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
	if err := m.Transform("spend", func(old []byte) ([]byte, error) {
		return append(old, 'x'), nil
	}); err != nil {
		t.Fatal(err)
	}
	n, err := m.RemoveRecords(func(name string, rec []byte) bool { return name == "spend" && string(rec) == "x" })
	if err != nil || n != 1 {
		t.Fatalf("RemoveRecords = %d, %v; want 1 record dropped", n, err)
	}
	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := state(t, b); got != Closed {
		t.Fatalf("state after Reset = %s, want closed", got)
	}
}
