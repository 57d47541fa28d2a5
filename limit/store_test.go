//go:build linux

package limit

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/leaktest"
	"github.com/sluice-llm/sluice/state"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock { return &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)} }

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// openStateB opens a state directory for a benchmark.
func openStateB(b *testing.B) *state.File {
	st, err := state.OpenFile(b.TempDir(), state.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// openState opens the state directory dir, closed when the test ends.
func openState(t *testing.T, dir string) *state.File {
	t.Helper()
	st, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// fileStore returns a File on dir on clock (the real one if nil).
func fileStore(t *testing.T, dir string, clock *fakeClock) *File {
	t.Helper()
	f, err := NewFile(openState(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		f.now = clock.now
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestStores: Reserve, Cancel, Settle and Pause do the same in every Store.
func TestStores(t *testing.T) {
	for _, name := range []string{"memory", "file"} {
		t.Run(name, func(t *testing.T) {
			leaktest.Check(t)
			clock := newClock()
			var st Store = &Memory{now: clock.now}
			if name == "file" {
				st = fileStore(t, t.TempDir(), clock)
			}
			t0 := clock.now()
			r := Rate{Limit: 120, Per: time.Minute}
			at := func(d time.Duration) time.Time { return t0.Add(d) }
			reserve := func(nb time.Time, wait time.Duration) (time.Duration, bool) {
				t.Helper()
				got, ok, err := st.Reserve("k", r, 1, nb, wait)
				if err != nil {
					t.Fatal(err)
				}
				return got.Sub(t0), ok
			}
			freeAt := func() time.Duration {
				t.Helper()
				f, err := st.FreeAt("k")
				if err != nil {
					t.Fatal(err)
				}
				return f.Sub(t0)
			}
			if got, ok := reserve(time.Time{}, 0); !ok || got != 0 {
				t.Fatalf("first: %v %v", got, ok)
			}
			if got, ok := reserve(time.Time{}, time.Second); !ok || got != 500*time.Millisecond {
				t.Fatalf("second: %v %v", got, ok)
			}
			if got, ok := reserve(time.Time{}, 999*time.Millisecond); ok || got != time.Second {
				t.Fatalf("third, may wait 999ms: %v %v, want refused with 1s", got, ok)
			}
			if got := freeAt(); got != time.Second {
				t.Fatalf("refusal took something: TAT %v", got)
			}
			st.Cancel("k", r, at(0), 1) // not the last: lost
			if got := freeAt(); got != time.Second {
				t.Fatalf("cancel of a slot not last moved the TAT to %v", got)
			}
			st.Cancel("k", r, at(500*time.Millisecond), 1) // the last: back
			if got := freeAt(); got != 500*time.Millisecond {
				t.Fatalf("cancel of the last slot: TAT %v, want 500ms", got)
			}
			st.Settle("k", r, 4) // 4 more: 2 s later
			if got := freeAt(); got != 2500*time.Millisecond {
				t.Fatalf("settle +4: TAT %v, want 2.5s", got)
			}
			st.Settle("k", r, -2)
			if got := freeAt(); got != 1500*time.Millisecond {
				t.Fatalf("settle -2: TAT %v, want 1.5s", got)
			}
			clock.add(time.Second)
			st.Settle("k", r, -10) // never below now
			if got := freeAt(); got != time.Second {
				t.Fatalf("settle -10: TAT %v, want now (1s)", got)
			}
			clock.add(time.Second)
			st.Settle("k", r, -10) // a TAT in the past stays
			if got := freeAt(); got != time.Second {
				t.Fatalf("settle on an idle bucket: TAT %v, want 1s", got)
			}
			if got, ok := reserve(at(3*time.Second), time.Second); !ok || got != 3*time.Second {
				t.Fatalf("not before 3s: %v %v", got, ok)
			}
			st.Pause("p", at(time.Minute))
			st.Pause("p", at(time.Second)) // earlier: kept the later
			if p, _ := st.PausedUntil("p"); !p.Equal(at(time.Minute)) {
				t.Fatalf("paused until %v, want 1m", p.Sub(t0))
			}
			if p, _ := st.PausedUntil("never"); !p.IsZero() {
				t.Fatalf("a key never paused reads %v", p)
			}
			if err := st.Resume("p"); err != nil {
				t.Fatal(err)
			}
			if p, _ := st.PausedUntil("p"); p.After(clock.now()) {
				t.Fatalf("resumed, still paused until %v", p.Sub(t0))
			}
			st.Pause("p", at(time.Second)) // a pause after a resume holds again
			if p, _ := st.PausedUntil("p"); !p.Equal(at(time.Second)) {
				t.Fatalf("paused again until %v, want 1s", p.Sub(t0))
			}
			if err := st.Resume("never"); err != nil {
				t.Fatalf("resume of a key never paused: %v", err)
			}
		})
	}
}

// TestFileReserveTakesNoLock: once a key's record exists, reservations
// and cancels make no system call.
func TestFileReserveTakesNoLock(t *testing.T) {
	f := fileStore(t, t.TempDir(), nil)
	r := Rate{Limit: 1_000_000, Per: time.Second}
	f.Reserve("k", r, 1, time.Time{}, time.Hour)
	f.PausedUntil("pause:k") // a name with no file is looked up once
	f.Close()                // the first reservation started a sweep
	before := state.Syscalls()
	for range 100 {
		at, ok, err := f.Reserve("k", r, 1, time.Time{}, time.Hour)
		if !ok || err != nil {
			t.Fatal(ok, err)
		}
		f.Cancel("k", r, at, 1)
		f.PausedUntil("pause:k")
	}
	if n := state.Syscalls() - before; n != 0 {
		t.Errorf("100 reservations made %d system calls, want 0", n)
	}
}

// TestFileTwoHandlesExact: two state.Files on one directory, 16 goroutines
// reserving at once: every slot distinct, spaced by exactly the interval.
func TestFileTwoHandlesExact(t *testing.T) {
	leaktest.Check(t)
	dir := t.TempDir()
	a, b := fileStore(t, dir, nil), fileStore(t, dir, nil)
	r := Rate{Limit: 1, Per: time.Second} // far slower than the test: every slot queues behind the last
	var mu sync.Mutex
	var ats []int64
	var wg sync.WaitGroup
	for g := range 16 {
		st := []*File{a, b}[g%2]
		wg.Go(func() {
			for range 50 {
				at, ok, err := st.Reserve("limit:rpm:openai:requests", r, 1, time.Time{}, 24*time.Hour)
				if !ok || err != nil {
					t.Error(ok, err)
					return
				}
				mu.Lock()
				ats = append(ats, at.UnixNano())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	checkSpaced(t, ats, 800, int64(time.Second))
}

// checkSpaced fails unless ats are n slots, once sorted each exactly step
// after the one before.
func checkSpaced(t *testing.T, ats []int64, n int, step int64) {
	t.Helper()
	if len(ats) != n {
		t.Fatalf("%d slots, want %d", len(ats), n)
	}
	sorted := append([]int64(nil), ats...)
	slicesSort(sorted)
	for i := 1; i < len(sorted); i++ {
		if d := sorted[i] - sorted[i-1]; d != step {
			t.Fatalf("slots %d and %d are %v apart, want exactly %v", i-1, i, time.Duration(d), time.Duration(step))
		}
	}
}

// TestSweepIdle: a thousand keys used once are swept once idle for a
// minute; a key still queued and a key still paused stay.
func TestSweepIdle(t *testing.T) {
	leaktest.Check(t)
	clock := newClock()
	dir := t.TempDir()
	f := fileStore(t, dir, clock)
	m := &Memory{now: clock.now}
	r := Rate{Limit: 60, Per: time.Minute}
	for _, st := range []Store{f, m} {
		for i := range 1000 {
			st.Reserve("limit:k:client-"+itoa(i)+":requests", r, 1, time.Time{}, 0)
		}
		st.Reserve("busy", Rate{Limit: 1, Per: time.Hour}, 1, time.Time{}, 0) // TAT an hour away
		st.Pause("pause:openai/m", clock.now().Add(5*time.Minute))
	}
	f.Close()
	if n := countFiles(t, dir, fileExt); n != 1002 {
		t.Fatalf("%d record files, want 1002", n)
	}
	clock.add(time.Minute) // TATs 59 s in the past: not yet
	if n, _ := f.sweep(clock.now().UnixNano()); n != 0 {
		t.Fatalf("swept %d records idle for less than a minute", n)
	}
	clock.add(time.Second)
	if n, _ := f.sweep(clock.now().UnixNano()); n != 1000 {
		t.Fatalf("swept %d records, want the 1000 idle ones", n)
	}
	if n := countFiles(t, dir, fileExt); n != 2 {
		t.Fatalf("%d record files left, want 2 (busy, paused)", n)
	}
	if p, _ := f.PausedUntil("pause:openai/m"); p.IsZero() {
		t.Fatal("the pause was swept")
	}
	m.Reserve("another", r, 1, time.Time{}, 0) // a sweep is due: it runs
	if n := m.Len(); n != 3 {
		t.Fatalf("memory holds %d records after its sweep, want 3", n)
	}
	// A swept key starts afresh: its slot is now.
	at, ok, _ := f.Reserve("limit:k:client-7:requests", r, 1, time.Time{}, 0)
	if !ok || !at.Equal(clock.now()) {
		t.Fatalf("swept key: %v %v, want now", at, ok)
	}
}

// TestFileDamagedReadsEmpty: a record file filled with garbage reads as an
// empty bucket, and the next reservation writes a good one.
func TestFileDamagedReadsEmpty(t *testing.T) {
	clock := newClock()
	dir := t.TempDir()
	f := fileStore(t, dir, clock)
	r := Rate{Limit: 1, Per: time.Minute}
	f.Reserve("limit:rpm:all:requests", r, 1, time.Time{}, 0)
	f.Close()
	names, _ := filepath.Glob(filepath.Join(dir, "*"+fileExt))
	if len(names) != 1 {
		t.Fatalf("files %v", names)
	}
	if err := os.WriteFile(names[0], []byte(strings.Repeat("garbage!", 32)), 0o600); err != nil {
		t.Fatal(err)
	}
	g := fileStore(t, dir, clock) // another process, as it were
	if free, err := g.FreeAt("limit:rpm:all:requests"); err != nil || !free.IsZero() {
		t.Fatalf("damaged record reads %v (%v), want an empty bucket", free, err)
	}
	at, ok, err := g.Reserve("limit:rpm:all:requests", r, 1, time.Time{}, 0)
	if !ok || err != nil || !at.Equal(clock.now()) {
		t.Fatalf("reservation on a damaged record: %v %v %v", at, ok, err)
	}
	if free, _ := g.FreeAt("limit:rpm:all:requests"); !free.Equal(clock.now().Add(time.Minute)) {
		t.Fatalf("TAT after the repair %v, want now+1m", free)
	}
}

func countFiles(t *testing.T, dir, ext string) int {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*"+ext))
	if err != nil {
		t.Fatal(err)
	}
	return len(names)
}

func itoa(i int) string { return strconv.Itoa(i) }

func slicesSort(s []int64) { slices.Sort(s) }

// TestLimiterOnFileNoLeak: calls queued on a File store whose context
// ends all return at once and leave no goroutine.
func TestLimiterOnFileNoLeak(t *testing.T) {
	leaktest.Check(t)
	f := fileStore(t, t.TempDir(), nil)
	l := &Limiter{Store: f, Limits: []Limit{{Name: "rps", Requests: Rate{Limit: 1, Per: time.Second}}}}
	bg := context.Background()
	if _, _, err := l.Wait(bg, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(bg)
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if _, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute}); err != context.Canceled {
				t.Errorf("queued call: %v, want context.Canceled", err)
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for l.Queued() != 20 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	cancel()
	wg.Wait()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancelled calls took %v to return", d)
	}
	if q := l.Queued(); q != 0 {
		t.Errorf("%d calls still counted queued", q)
	}
	f.Close()
}
