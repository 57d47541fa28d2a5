//go:build linux

package state

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// mappingsOf counts this process's memory mappings of state files in dir
// (not of the generation page).
func mappingsOf(t testing.TB, dir string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for line := range bytes.Lines(b) {
		if bytes.Contains(line, []byte(dir+"/")) && !bytes.Contains(line, []byte(genFileName)) {
			n++
		}
	}
	return n
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestFileTransformToNothingRemovesRecord(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	path := filepath.Join(dir, "k.record")
	a.Transform("k", func([]byte) ([]byte, error) { return []byte("spent"), nil })
	if got, _ := b.Snapshot("k"); string(got) != "spent" {
		t.Fatalf("other store reads %q", got)
	}
	a.Transform("k", func([]byte) ([]byte, error) { return nil, nil })
	if exists(path) {
		t.Fatal("a record transformed to nothing kept its file")
	}
	if got, err := b.Snapshot("k"); got != nil || err != nil {
		t.Fatalf("after removal the other store reads %q, %v; want nothing", got, err)
	}
	b.Transform("k", func(old []byte) ([]byte, error) { return append(old, "again"...), nil })
	if got, _ := a.Snapshot("k"); string(got) != "again" {
		t.Fatalf("a record made again reads %q in the store that removed it, want \"again\"", got)
	}
	if n := mappingsOf(t, dir); n > 2 {
		t.Fatalf("%d mappings of state files, want at most 2 (one per store)", n)
	}
}

// A reader may still hold the address of a file the store just closed:
// that address must stay readable (zeros) and the reader's view stale.
func TestFileClosedPageStaysReadable(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFile(dir, FileOptions{MaxOpen: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	k := f.Kind(".test", KindOptions{})
	k.Transform("a", func([]byte) ([]byte, error) { return []byte("1"), nil })
	k.Load("a")
	sa, _ := f.slot(k, "a")
	stale := sa.view.Load()
	if stale == nil || stale.m == nil {
		t.Fatal("no view of a mapped file")
	}
	k.Transform("a", func([]byte) ([]byte, error) { return nil, nil }) // the file is removed and its page let go
	if got := atomic.LoadUint64(&stale.m.w[wMagic]); got != 0 {
		t.Fatalf("the page of a closed file reads magic %#x, want 0 (anonymous memory)", got)
	}
	if f.fresh(sa, stale) {
		t.Fatal("a view of a closed file still reads as fresh")
	}
	k.Transform("b", func([]byte) ([]byte, error) { return []byte("1"), nil }) // the page now holds another file
	if f.fresh(sa, stale) {
		t.Fatal("a view of a closed file reads as fresh once its page holds another file")
	}
	if got, _ := k.Load("a"); got != nil {
		t.Fatalf("a reads %q, want nothing", got)
	}
}

// The table of names keeps those in recent use: touching ten thousand
// names, of two kinds, leaves at most a bounded number in it.
func TestFileTableOfNamesStaysBounded(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	k := f.Kind(".test", KindOptions{})
	for i := range 10000 {
		name := fmt.Sprint("name-", i)
		if _, err := k.Load(name); err != nil {
			t.Fatal(err)
		}
		if i%100 == 0 {
			f.Transform(name, func([]byte) ([]byte, error) { return []byte("x"), nil })
			f.Transform(name, func([]byte) ([]byte, error) { return nil, nil })
		}
	}
	if n := f.nslots.Load(); n > 4*f.prunePoint(0) {
		t.Errorf("%d names kept in the table, want at most %d", n, 4*f.prunePoint(0))
	}
}
