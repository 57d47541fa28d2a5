//go:build linux

package breaker

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents) - 1 // the one ReadDir itself used
}

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

// stateFiles counts the state files in dir.
func stateFiles(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".breaker") || strings.HasSuffix(e.Name(), ".record") {
			n++
		}
	}
	return n
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func TestFileIdleBreakerHasNoFile(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	b := New("p", Settings{Failures: 3, Cool: time.Hour}, f)
	path := filepath.Join(dir, "p.breaker")
	for range 100 {
		p, _ := b.Allow()
		p.Done(Success, 0)
	}
	if exists(path) {
		t.Fatal("a breaker that only saw successes has a state file")
	}
	p, _ := b.Allow()
	p.Done(Failure, 0)
	if got, _ := b.Record(); got.Failures != 1 || !exists(path) {
		t.Fatalf("after a failure: %+v, file %v; want 1 failure in a file", got, exists(path))
	}
	p, _ = b.Allow()
	p.Done(Success, 0)
	if got, _ := b.Record(); got.Failures != 0 || exists(path) {
		t.Fatalf("after the success that cleared the count: %+v, file %v; want idle and no file", got, exists(path))
	}
	for range 3 {
		p, _ := b.Allow()
		p.Done(Failure, 0)
	}
	if got, _ := b.Record(); got.State != Open || !exists(path) {
		t.Fatalf("after 3 failures: %+v, file %v; want open in a file", got, exists(path))
	}
	b.Reset()
	if got, _ := b.Record(); got.State != Closed || got.Transitions != 2 || !exists(path) {
		t.Fatalf("after Reset: %+v, file %v; want closed after 2 transitions, kept in its file", got, exists(path))
	}
}

// Another store over the same directory stands for another process: its
// own descriptors, mappings and locks.
func TestFileCreationAndRemovalSeenByOtherStore(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	s := Settings{Failures: 2, Cool: time.Hour}
	for round := range 3 {
		if got, _ := b.Load("p"); got.State != Closed || got.Failures != 0 {
			t.Fatalf("round %d: fresh breaker loads %+v", round, got)
		}
		calls := fileSyscalls.Load()
		for range 100 {
			b.Load("p")
		}
		if n := fileSyscalls.Load() - calls; n != 0 {
			t.Fatalf("round %d: %d system calls over 100 Loads of a breaker with no file, want 0", round, n)
		}
		a.Apply("p", s, Event{Kind: EventFailure})
		if got, _ := b.Load("p"); got.Failures != 1 {
			t.Fatalf("round %d: the other store's next Load after the file was created sees %+v, want 1 failure", round, got)
		}
		a.Apply("p", s, Event{Kind: EventSuccess}) // idle again: the file goes
		if exists(filepath.Join(dir, "p.breaker")) {
			t.Fatalf("round %d: idle breaker's file not removed", round)
		}
		if got, _ := b.Load("p"); got.Failures != 0 {
			t.Fatalf("round %d: after removal the other store loads %+v, want idle", round, got)
		}
		if n := mappingsOf(t, dir); n != 0 {
			t.Fatalf("round %d: %d mappings of state files left after removal, want 0", round, n)
		}
	}
	a.Apply("p", s, Event{Kind: EventTrip})
	if got, _ := b.Load("p"); got.State != Open {
		t.Fatalf("after a trip in the other store: %+v, want open", got)
	}
}

func TestFileTenThousandBreakerNamesStayBounded(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	other, _ := openTestFile(t, dir) // a second process watching the same names
	s := Settings{Failures: 3, Cool: time.Hour}
	start := openFDs(t)
	peak := 0
	const names = 10000
	opened := 0
	for i := range names {
		b := New(fmt.Sprintf("openai/model-%d", i), s, f)
		p, _ := b.Allow()
		p.Done(Success, 0)
		other.Load(b.Name())
		switch {
		case i%100 == 0: // a few failures, then a success clears them
			p, _ = b.Allow()
			p.Done(Failure, 0)
			other.Load(b.Name())
			p, _ = b.Allow()
			p.Done(Success, 0)
		case i%1000 == 1: // a few open for good
			b.store.Apply(b.Name(), s, Event{Kind: EventTrip})
			opened++
		}
		if i%500 == 0 {
			peak = max(peak, openFDs(t)-start)
		}
	}
	peak = max(peak, openFDs(t)-start)
	bound := 2 * defaultMaxOpen // two stores
	t.Logf("%d names: peak %d descriptors above the start (bound %d), %d state files, %d mappings, %d names in the table",
		names, peak, bound, stateFiles(t, dir), mappingsOf(t, dir), f.nslots.Load())
	if peak > bound {
		t.Errorf("descriptors grew by %d over %d names, want at most %d", peak, names, bound)
	}
	if n := stateFiles(t, dir); n != opened {
		t.Errorf("%d state files, want %d (only the breakers left open)", n, opened)
	}
	if n := mappingsOf(t, dir); n > bound {
		t.Errorf("%d mappings of state files, want at most %d", n, bound)
	}
	if n := f.nslots.Load(); n > 4*f.prunePoint(0) {
		t.Errorf("%d names kept in the table, want at most %d", n, 4*f.prunePoint(0))
	}
	for i := 1; i < names; i += 1000 {
		if got, _ := other.Load(fmt.Sprintf("openai/model-%d", i)); got.State != Open {
			t.Errorf("model-%d: %v in the other store, want open", i, got.State)
		}
	}
}

func TestFileMaxOpenCapsDescriptors(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFile(dir, FileOptions{MaxOpen: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := openFDs(t)
	s := Settings{Failures: 1000}
	for round := range 3 {
		for i := range 50 {
			if _, err := f.Apply(fmt.Sprint("p", i), s, Event{Kind: EventFailure}); err != nil {
				t.Fatal(err)
			}
			if n := openFDs(t) - start; n > 4 {
				t.Fatalf("round %d, name %d: %d descriptors open, want at most MaxOpen 4", round, i, n)
			}
		}
	}
	for i := range 50 {
		if got, _ := f.Load(fmt.Sprint("p", i)); got.Failures != 3 {
			t.Fatalf("p%d: %d failures after closing and reopening, want 3", i, got.Failures)
		}
	}
	if _, err := OpenFile(dir, FileOptions{MaxOpen: -1}); err == nil || !strings.Contains(err.Error(), "MaxOpen") {
		t.Errorf("OpenFile with MaxOpen -1: %v, want an error naming MaxOpen", err)
	}
}

func TestFileReplacedFilesReleased(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	s := Settings{Failures: 1000}
	f.Apply("p", s, Event{Kind: EventFailure})
	fds, maps := openFDs(t), mappingsOf(t, dir)
	path := filepath.Join(dir, "p.breaker")
	for i := range 10 {
		b, _ := os.ReadFile(path)
		tmp := filepath.Join(dir, "copy")
		os.WriteFile(tmp, b, 0o600)
		if err := os.Rename(tmp, path); err != nil { // a new file in its place
			t.Fatal(err)
		}
		rec, err := f.Apply("p", s, Event{Kind: EventFailure})
		if err != nil || rec.Failures != i+2 {
			t.Fatalf("replacement %d: Apply = %+v, %v; want %d failures", i, rec, err, i+2)
		}
	}
	if got, want := openFDs(t), fds; got != want {
		t.Errorf("%d descriptors after 10 replaced files, want %d as before", got, want)
	}
	if got := mappingsOf(t, dir); got != maps {
		t.Errorf("%d mappings of state files after 10 replacements, want %d as before", got, maps)
	}
}

// Readers race the closing of their files: with one page for three names
// used in turn, every read goes through a page that another name takes
// away at any moment. No reader may see a record that was never written,
// nor a count that went back.
func TestFileEvictionRacingReadersStress(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFile(dir, FileOptions{MaxOpen: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	writer, _ := openTestFile(t, dir)
	s := Settings{Failures: 1 << 30}
	names := []string{"a", "b", "c"}
	for _, n := range names {
		writer.Apply(n, s, Event{Kind: EventFailure})
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	for r := range 6 {
		wg.Go(func() {
			last := map[string]int{}
			for i := 0; !stop.Load(); i++ {
				n := names[(i+r)%len(names)]
				rec, err := f.Load(n)
				if err != nil {
					t.Error(err)
					return
				}
				if rec.State != Closed || rec.Failures < last[n] || rec.Failures == 0 {
					t.Errorf("%s: read %+v after %d failures", n, rec, last[n])
					return
				}
				last[n] = rec.Failures
				reads.Add(1)
			}
		})
	}
	wg.Go(func() {
		for i := 0; !stop.Load(); i++ {
			if i%2 == 0 {
				writer.Apply(names[i%3], s, Event{Kind: EventFailure})
			} else {
				f.Apply(names[i%3], s, Event{Kind: EventFailure})
			}
		}
	})
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d reads through one page shared by 3 names", reads.Load())
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

func TestFileRemoveRecords(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	for i := range 10 {
		a.Transform(fmt.Sprint("k", i), func([]byte) ([]byte, error) { return []byte{byte(i)}, nil })
	}
	a.Apply("breaker", Settings{}, Event{Kind: EventFailure})
	n, err := b.RemoveRecords(func(name string, rec []byte) bool { return rec[0]%2 == 0 })
	if err != nil || n != 5 {
		t.Fatalf("RemoveRecords = %d, %v; want 5 removed", n, err)
	}
	if got := stateFiles(t, dir); got != 6 {
		t.Fatalf("%d state files left, want 5 records and 1 breaker", got)
	}
	for i := range 10 {
		got, _ := a.Snapshot(fmt.Sprint("k", i))
		if want := i%2 == 1; (got != nil) != want {
			t.Errorf("k%d reads %v after the sweep, want kept = %v", i, got, want)
		}
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
	s := Settings{Failures: 1000}
	f.Apply("a", s, Event{Kind: EventFailure})
	f.Load("a")
	sa, _ := f.slot("a", kindBreaker)
	stale := sa.view.Load()
	if stale == nil || stale.m == nil {
		t.Fatal("no view of a mapped file")
	}
	f.Apply("a", s, Event{Kind: EventSuccess}) // idle: the file is removed and its page let go
	if got := atomic.LoadUint64(&stale.m.w[wMagic]); got != 0 {
		t.Fatalf("the page of a closed file reads magic %#x, want 0 (anonymous memory)", got)
	}
	if f.fresh(sa, stale) {
		t.Fatal("a view of a closed file still reads as fresh")
	}
	f.Apply("b", s, Event{Kind: EventFailure}) // the page now holds another file
	if f.fresh(sa, stale) {
		t.Fatal("a view of a closed file reads as fresh once its page holds another file")
	}
	if got, _ := f.Load("a"); got.Failures != 0 {
		t.Fatalf("a reads %+v, want idle", got)
	}
}
