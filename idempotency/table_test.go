//go:build unix

package idempotency

import (
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// TestFileChangeCutShortIsCompleted: a change to a table stopped where a
// process killed in the middle of it stops (its patches written, the word
// that makes them the table not) is completed by the next step of any
// opener: no mark of the shard is lost, the change is not undone.
func TestFileChangeCutShortIsCompleted(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFile(dir, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	now := time.Now()
	id := func(s string) string { return "ab" + strings.Repeat(s, 62) } // one shard
	var fp [32]byte
	for _, v := range []string{"1", "2", "3"} {
		if r, err := f.Begin(id(v), fp, time.Minute, now); err != nil || r.Verdict != Run {
			t.Fatal(r.Verdict, err)
		}
	}
	// Mark 1 removed and the log head rewritten in one change, as Keep
	// does, stopped before its last store.
	err = f.transform(id("1"), func(s *shard, tb *table) error {
		i := tb.find(id("1"))
		last := append([]byte(nil), tb.slot(tb.n-1)...)
		head := append([]byte(nil), tb.stageHead(tb.log)...)
		_, intent, err := tb.write(tb.n-1, []patch{{16, head}, {tableHead + i*markSize, last}})
		if !intent {
			t.Error("the change wrote no intent")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	other, err := OpenFile(dir, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for _, c := range []struct {
		s    *File
		v    string
		want Verdict
	}{{other, "2", InFlight}, {other, "3", InFlight}, {other, "1", Run}, {f, "2", InFlight}, {f, "1", InFlight}} {
		if r, err := c.s.Begin(id(c.v), fp, time.Minute, now); err != nil || r.Verdict != c.want {
			t.Errorf("mark %s: %v %v, want %v", c.v, r.Verdict, err, c.want)
		}
	}
}

// TestTableIntactFaults: the sentinel check of a mapping whose file was
// cut below it reads as not intact rather than crashing.
func TestTableIntactFaults(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFile(dir, FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id := "cd" + strings.Repeat("0", 62)
	if _, err := f.Begin(id, [32]byte{}, time.Minute, time.Now()); err != nil {
		t.Fatal(err)
	}
	s := &f.locks[hexByte(id)]
	if !s.t.intact() {
		t.Fatal("a mapping just used is not intact")
	}
	if err := s.t.f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if s.t.intact() {
		t.Fatal("a mapping of a file cut to nothing reads as intact")
	}
}
