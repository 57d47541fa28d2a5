//go:build linux

package filestore

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

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/state"
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
		if bytes.Contains(line, []byte(dir+"/")) && !bytes.Contains(line, []byte(".generations")) {
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
	b := breaker.New("p", breaker.Settings{Failures: 3, Cool: time.Hour}, f)
	path := filepath.Join(dir, "p.breaker")
	for range 100 {
		p, _ := b.Allow()
		p.Done(breaker.Success, 0)
	}
	if exists(path) {
		t.Fatal("a breaker that only saw successes has a state file")
	}
	p, _ := b.Allow()
	p.Done(breaker.Failure, 0)
	if got, _ := b.Record(); got.Failures != 1 || !exists(path) {
		t.Fatalf("after a failure: %+v, file %v; want 1 failure in a file", got, exists(path))
	}
	p, _ = b.Allow()
	p.Done(breaker.Success, 0)
	if got, _ := b.Record(); got.Failures != 0 || exists(path) {
		t.Fatalf("after the success that cleared the count: %+v, file %v; want idle and no file", got, exists(path))
	}
	for range 3 {
		p, _ := b.Allow()
		p.Done(breaker.Failure, 0)
	}
	if got, _ := b.Record(); got.State != breaker.Open || !exists(path) {
		t.Fatalf("after 3 failures: %+v, file %v; want open in a file", got, exists(path))
	}
	b.Reset()
	if got, _ := b.Record(); got.State != breaker.Closed || got.Transitions != 2 || !exists(path) {
		t.Fatalf("after Reset: %+v, file %v; want closed after 2 transitions, kept in its file", got, exists(path))
	}
}

// Another store over the same directory stands for another process: its
// own descriptors, mappings and locks.
func TestFileCreationAndRemovalSeenByOtherStore(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	s := breaker.Settings{Failures: 2, Cool: time.Hour}
	for round := range 3 {
		if got, _ := b.Load("p"); got.State != breaker.Closed || got.Failures != 0 {
			t.Fatalf("round %d: fresh breaker loads %+v", round, got)
		}
		calls := state.Syscalls()
		for range 100 {
			b.Load("p")
		}
		if n := state.Syscalls() - calls; n != 0 {
			t.Fatalf("round %d: %d system calls over 100 Loads of a breaker with no file, want 0", round, n)
		}
		a.Apply("p", s, breaker.Event{Kind: breaker.EventFailure})
		if got, _ := b.Load("p"); got.Failures != 1 {
			t.Fatalf("round %d: the other store's next Load after the file was created sees %+v, want 1 failure", round, got)
		}
		a.Apply("p", s, breaker.Event{Kind: breaker.EventSuccess}) // idle again: the file goes
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
	a.Apply("p", s, breaker.Event{Kind: breaker.EventTrip})
	if got, _ := b.Load("p"); got.State != breaker.Open {
		t.Fatalf("after a trip in the other store: %+v, want open", got)
	}
}

func TestFileTenThousandBreakerNamesStayBounded(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	other, _ := openTestFile(t, dir) // a second process watching the same names
	s := breaker.Settings{Failures: 3, Cool: time.Hour}
	start := openFDs(t)
	peak := 0
	const names = 10000
	opened := 0
	for i := range names {
		b := breaker.New(fmt.Sprintf("openai/model-%d", i), s, f)
		p, _ := b.Allow()
		p.Done(breaker.Success, 0)
		other.Load(b.Name())
		switch {
		case i%100 == 0: // a few failures, then a success clears them
			p, _ = b.Allow()
			p.Done(breaker.Failure, 0)
			other.Load(b.Name())
			p, _ = b.Allow()
			p.Done(breaker.Success, 0)
		case i%1000 == 1: // a few open for good
			f.Apply(b.Name(), s, breaker.Event{Kind: breaker.EventTrip})
			opened++
		}
		if i%500 == 0 {
			peak = max(peak, openFDs(t)-start)
		}
	}
	peak = max(peak, openFDs(t)-start)
	bound := 2 * defaultMaxOpen // two stores
	t.Logf("%d names: peak %d descriptors above the start (bound %d), %d state files, %d mappings",
		names, peak, bound, stateFiles(t, dir), mappingsOf(t, dir))
	if peak > bound {
		t.Errorf("descriptors grew by %d over %d names, want at most %d", peak, names, bound)
	}
	if n := stateFiles(t, dir); n != opened {
		t.Errorf("%d state files, want %d (only the breakers left open)", n, opened)
	}
	if n := mappingsOf(t, dir); n > bound {
		t.Errorf("%d mappings of state files, want at most %d", n, bound)
	}
	for i := 1; i < names; i += 1000 {
		if got, _ := other.Load(fmt.Sprintf("openai/model-%d", i)); got.State != breaker.Open {
			t.Errorf("model-%d: %v in the other store, want open", i, got.State)
		}
	}
}

func TestFileMaxOpenCapsDescriptors(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir, Options{MaxOpen: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := openFDs(t)
	s := breaker.Settings{Failures: 1000}
	for round := range 3 {
		for i := range 50 {
			if _, _, err := f.Apply(fmt.Sprint("p", i), s, breaker.Event{Kind: breaker.EventFailure}); err != nil {
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
	if _, err := Open(dir, Options{MaxOpen: -1}); err == nil || !strings.Contains(err.Error(), "MaxOpen") {
		t.Errorf("OpenFile with MaxOpen -1: %v, want an error naming MaxOpen", err)
	}
}

func TestFileReplacedFilesReleased(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	s := breaker.Settings{Failures: 1000}
	f.Apply("p", s, breaker.Event{Kind: breaker.EventFailure})
	fds, maps := openFDs(t), mappingsOf(t, dir)
	path := filepath.Join(dir, "p.breaker")
	for i := range 10 {
		b, _ := os.ReadFile(path)
		tmp := filepath.Join(dir, "copy")
		os.WriteFile(tmp, b, 0o600)
		if err := os.Rename(tmp, path); err != nil { // a new file in its place
			t.Fatal(err)
		}
		_, rec, err := f.Apply("p", s, breaker.Event{Kind: breaker.EventFailure})
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
	f, err := Open(dir, Options{MaxOpen: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	writer, _ := openTestFile(t, dir)
	s := breaker.Settings{Failures: 1 << 30}
	names := []string{"a", "b", "c"}
	for _, n := range names {
		writer.Apply(n, s, breaker.Event{Kind: breaker.EventFailure})
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
				if rec.State != breaker.Closed || rec.Failures < last[n] || rec.Failures == 0 {
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
				writer.Apply(names[i%3], s, breaker.Event{Kind: breaker.EventFailure})
			} else {
				f.Apply(names[i%3], s, breaker.Event{Kind: breaker.EventFailure})
			}
		}
	})
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d reads through one page shared by 3 names", reads.Load())
}

func TestFileRemoveRecords(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	for i := range 10 {
		a.Records().Transform(fmt.Sprint("k", i), func([]byte) ([]byte, error) { return []byte{byte(i)}, nil })
	}
	a.Apply("breaker", breaker.Settings{}, breaker.Event{Kind: breaker.EventFailure})
	n, err := b.Records().RemoveRecords(func(name string, rec []byte) bool { return rec[0]%2 == 0 })
	if err != nil || n != 5 {
		t.Fatalf("RemoveRecords = %d, %v; want 5 removed", n, err)
	}
	if got := stateFiles(t, dir); got != 6 {
		t.Fatalf("%d state files left, want 5 records and 1 breaker", got)
	}
	for i := range 10 {
		got, _ := a.Records().Snapshot(fmt.Sprint("k", i))
		if want := i%2 == 1; (got != nil) != want {
			t.Errorf("k%d reads %v after the sweep, want kept = %v", i, got, want)
		}
	}
}
