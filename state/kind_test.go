//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package state

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// counter is a test kind: one byte, decoded to an int, blank 0.
var counter = KindOptions{
	Blank: []byte{0},
	Decode: func(b []byte) (any, bool) {
		if len(b) != 1 {
			return nil, false
		}
		return int(b[0]), true
	},
}

func incr(old []byte) ([]byte, error) {
	if len(old) != 1 {
		return []byte{1}, nil
	}
	return []byte{old[0] + 1}, nil
}

func TestKindDecodesAndSharesBetweenFiles(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	ka, kb := a.Kind(".counter", counter), b.Kind(".counter", counter)
	if a.Kind(".counter", KindOptions{}) != ka {
		t.Fatal("a second Kind call for the same extension made another kind")
	}
	if v, err := kb.Load("c/1"); v != nil || err != nil {
		t.Fatalf("Load of a record never written = %v, %v; want nil, nil", v, err)
	}
	for want := 1; want <= 3; want++ {
		if err := ka.Transform("c/1", incr); err != nil {
			t.Fatal(err)
		}
		if v, err := kb.Load("c/1"); v != want || err != nil {
			t.Fatalf("the other File loads %v, %v; want %d", v, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "c%2F1.counter")); err != nil {
		t.Fatalf("state file: %v", err)
	}
	if got, _ := a.Snapshot("c/1"); got != nil {
		t.Fatalf("the File's own record of the same name reads %q, want nothing: kinds are apart", got)
	}
	names, err := kb.Names()
	if err != nil || len(names) != 1 || names[0] != "c/1" {
		t.Fatalf("Names = %q, %v; want [c/1]", names, err)
	}
	n, err := kb.RemoveRecords(func(name string, rec []byte) bool { return name == "c/1" && rec[0] == 3 })
	if err != nil || n != 1 {
		t.Fatalf("RemoveRecords = %d, %v; want 1", n, err)
	}
	if v, _ := ka.Load("c/1"); v != nil {
		t.Fatalf("after the sweep Load = %v, want nil", v)
	}
}

func TestKindUnchangedRecordNotWritten(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	k := f.Kind(".counter", counter)
	k.Transform("c", incr)
	k.Load("c")
	s, _ := f.slot(k, "c")
	before := s.view.Load()
	if err := k.Transform("c", func(old []byte) ([]byte, error) { return old, nil }); err != nil {
		t.Fatal(err)
	}
	if !f.fresh(s, before) {
		t.Fatal("a record transformed to its own bytes was written")
	}
}

func TestKindUndecodableReadsAsNothing(t *testing.T) {
	dir := t.TempDir()
	f, lb := openTestFile(t, dir)
	k := f.Kind(".counter", counter)
	f2, _ := openTestFile(t, dir)
	f2.Kind(".counter", KindOptions{}).Transform("c", func([]byte) ([]byte, error) { return []byte("two bytes"), nil })
	for range 3 {
		if v, err := k.Load("c"); v != nil || err != nil {
			t.Fatalf("Load = %v, %v; want nil for a record its kind cannot decode", v, err)
		}
	}
	var seen []byte
	k.Transform("c", func(old []byte) ([]byte, error) { seen = old; return incr(old) })
	if seen != nil {
		t.Fatalf("Transform showed fn %q, want nil for an undecodable record", seen)
	}
	if v, _ := k.Load("c"); v != 1 {
		t.Fatalf("after the rewrite Load = %v, want 1", v)
	}
	if n := strings.Count(lb.String(), "damaged state file"); n != 1 {
		t.Fatalf("%d warnings, want 1; log:\n%s", n, lb)
	}
}

func TestKindRefusesBadExtensions(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	for _, ext := range []string{"", ".", "breaker", ".Breaker", ".a-b", ".generations", ".abcdefghijklmnopq"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Kind(%q) did not panic", ext)
				}
			}()
			f.Kind(ext, KindOptions{})
		}()
	}
	if f.Kind(".record", counter) != f.records {
		t.Error(`Kind(".record") is not the File's own records`)
	}
}

func TestKindUpdateShowsDecodedValue(t *testing.T) {
	dir := t.TempDir()
	f, lb := openTestFile(t, dir)
	var decodes atomic.Int64
	opts := counter
	opts.Decode = func(b []byte) (any, bool) {
		decodes.Add(1)
		return counter.Decode(b)
	}
	opts.Encode = func(dst []byte, v any) []byte { return append(dst, byte(v.(int))) }
	k := f.Kind(".counter", opts)
	add := func(old any) (any, error) {
		n, _ := old.(int)
		return n + 1, nil
	}
	for range 3 {
		if err := k.Update("c", add); err != nil {
			t.Fatal(err)
		}
	}
	if v, _ := k.Load("c"); v != 3 {
		t.Fatalf("after 3 Updates Load = %v, want 3", v)
	}
	if n := decodes.Load(); n != 1 {
		t.Fatalf("Updates and a Load of what they wrote decoded %d times, want 1 (the new file's blank record)", n)
	}
	if err := k.Update("c", func(any) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	if v, _ := k.Load("c"); v != nil {
		t.Fatalf("after an Update to nil Load = %v, want nil", v)
	}
	if err := f.Kind(".plain", KindOptions{}).Update("c", add); err == nil {
		t.Fatal("Update of a kind with no Encode: no error")
	}
	for range 3 {
		k.Update("c", add)
	}
	other, _ := openTestFile(t, dir)
	other.Kind(".counter", KindOptions{}).Transform("c", func([]byte) ([]byte, error) { return []byte("xx"), nil })
	var seen any = "unset"
	k.Update("c", func(old any) (any, error) { seen = old; return add(old) })
	if seen != nil {
		t.Fatalf("Update showed fn %v for an undecodable record, want nil", seen)
	}
	if v, _ := k.Load("c"); v != 1 {
		t.Fatalf("after rewriting an undecodable record Load = %v, want 1", v)
	}
	if n := strings.Count(lb.String(), "damaged state file"); n != 1 {
		t.Fatalf("%d warnings, want 1; log:\n%s", n, lb)
	}
}
