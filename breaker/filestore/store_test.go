//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filestore

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/state"
)

// logBuffer is a slog handler target safe for concurrent writers.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// The header words of a state file (see package state) that the damaged
// files below spoil, and the default of Options.MaxOpen.
const (
	wSeq           = 1
	wLen           = 3
	defaultMaxOpen = 64
)

func stateOf(t *testing.T, b *breaker.Breaker) breaker.State {
	t.Helper()
	r, err := b.Record()
	if err != nil {
		t.Fatal(err)
	}
	return r.State
}

func openTestFile(t *testing.T, dir string) (*Store, *logBuffer) {
	t.Helper()
	var lb logBuffer
	f, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&lb, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, &lb
}

func TestFileSharesRecordsBetweenStores(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	b, _ := openTestFile(t, dir)
	s := breaker.Settings{Failures: 2, Cool: time.Hour}
	name := "openai/gpt-4o"
	for i := range 2 {
		_, rec, err := a.Apply(name, s, breaker.Event{Kind: breaker.EventFailure})
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Load(name)
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Fatalf("after failure %d: other store loads %+v, %v; want %+v", i+1, got, err, rec)
		}
	}
	got, _ := b.Load(name)
	if got.State != breaker.Open || got.Reason != "failures" || got.Transitions != 1 {
		t.Fatalf("record %+v, want open for failures after one transition", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "openai%2Fgpt-4o.breaker")); err != nil {
		t.Fatalf("state file: %v", err)
	}
}

// Two stores on one directory act as two processes: each breaker's
// OnStateChange reports the changes its own process makes, exactly once
// however many callers race, and never one the other process made.
func TestFileOnStateChangeOwnChangesOnly(t *testing.T) {
	dir := t.TempDir()
	var mu sync.Mutex
	seen := map[string][]string{}
	settings := func(proc string) breaker.Settings {
		return breaker.Settings{Failures: 3, Cool: time.Hour, OnStateChange: func(name string, from breaker.State, to breaker.Record) {
			mu.Lock()
			defer mu.Unlock()
			seen[proc] = append(seen[proc], from.String()+"→"+to.State.String())
		}}
	}
	fa, _ := openTestFile(t, dir)
	fb, _ := openTestFile(t, dir)
	a, b := breaker.New("p", settings("a"), fa), breaker.New("p", settings("b"), fb)
	var permits []breaker.Permit
	for range 8 {
		p, _ := a.Allow()
		permits = append(permits, p)
	}
	var wg sync.WaitGroup
	for _, p := range permits {
		wg.Go(func() { p.Done(breaker.Failure, 0) })
	}
	wg.Wait()
	if r, _ := b.Record(); r.State != breaker.Open {
		t.Fatalf("the other process reads %+v, want open", r)
	}
	if err := b.Reset(); err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"a": {"closed→open"}, "b": {"open→closed"}}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("changes reported %q, want %q", seen, want)
	}
}

func TestFileAgreesWithMemory(t *testing.T) {
	s := breaker.Settings{Failures: 3, Cool: time.Hour, Lease: time.Hour,
		Slow: breaker.Slow{Threshold: time.Second, Count: 2, Window: time.Hour}}
	events := []breaker.Event{
		{Kind: breaker.EventFailure}, {Kind: breaker.EventSuccess}, {Kind: breaker.EventFailure}, {Kind: breaker.EventIgnored},
		{Kind: breaker.EventSuccess, Slow: true}, {Kind: breaker.EventSuccess, Slow: true},
		{Kind: breaker.Acquire, Token: 5}, {Kind: breaker.EventFailure}, {Kind: breaker.EventReset},
		{Kind: breaker.EventTrip}, {Kind: breaker.EventSuccess}, {Kind: breaker.EventReset}, {Kind: breaker.EventFailure},
	}
	f, _ := openTestFile(t, t.TempDir())
	m := breaker.NewMemory()
	var last breaker.State
	for i, e := range events {
		_, want, _ := m.Apply("p", s, e)
		from, got, err := f.Apply("p", s, e)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != want.State || got.Failures != want.Failures || len(got.Slow) != len(want.Slow) ||
			got.Reason != want.Reason || got.Transitions != want.Transitions {
			t.Fatalf("event %d %+v: file %+v, memory %+v", i, e, got, want)
		}
		if from != last {
			t.Fatalf("event %d %+v: the file says it was %s, want %s", i, e, from, last)
		}
		last = got.State
	}
}

func TestFileCapsSlowCount(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	s := breaker.Settings{Slow: breaker.Slow{Threshold: time.Second, Count: 40, Window: time.Hour}}
	b := breaker.New("p", s, f)
	for i := range breaker.MaxStoredSlow {
		if got := stateOf(t, b); got != breaker.Closed {
			t.Fatalf("after %d slow successes: %v, want closed", i, got)
		}
		p, _ := b.Allow()
		p.Done(breaker.Success, 2*time.Second)
	}
	if got := stateOf(t, b); got != breaker.Open {
		t.Fatalf("after %d slow successes with Count 40: %v, want open (Count capped)", breaker.MaxStoredSlow, got)
	}
}

func TestFilePermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f, _ := openTestFile(t, dir)
	if _, _, err := f.Apply("openai/x", breaker.Settings{}, breaker.Event{Kind: breaker.EventFailure}); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(dir)
	if got := st.Mode().Perm(); got != 0o700 {
		t.Errorf("dir mode %v, want 0700", got)
	}
	st, _ = os.Stat(filepath.Join(dir, "openai%2Fx.breaker"))
	if got := st.Mode().Perm(); got != 0o600 {
		t.Errorf("file mode %v, want 0600", got)
	}
	if got := st.Size(); got != state.FileSize {
		t.Errorf("file size %d, want %d", got, state.FileSize)
	}

	open := t.TempDir()
	os.Chmod(open, 0o755)
	openTestFile(t, open)
	if st, _ := os.Stat(open); st.Mode().Perm() != 0o700 {
		t.Errorf("existing 0755 dir left at %v, want made 0700", st.Mode().Perm())
	}
}

func TestFileList(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	names := []string{"openai", "openai/gpt-4o", "Anthropic", ".dot"}
	for _, n := range names {
		if _, _, err := f.Apply(n, breaker.Settings{Failures: 1}, breaker.Event{Kind: breaker.EventFailure}); err != nil {
			t.Fatal(err)
		}
	}
	for _, junk := range []string{"notes.txt", "%zz.breaker", "A.breaker", ".tmp-1"} {
		os.WriteFile(filepath.Join(dir, junk), []byte("x"), 0o600)
	}
	other, _ := openTestFile(t, dir)
	list, err := other.List()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".dot", "Anthropic", "openai", "openai/gpt-4o"}
	if got := breaker.Names(list); !reflect.DeepEqual(got, want) {
		t.Fatalf("List names %q, want %q", got, want)
	}
	for n, r := range list {
		if r.State != breaker.Open {
			t.Errorf("%s: %v, want open", n, r.State)
		}
	}
}

func TestFileDamagedReadsClosedAndIsRewritten(t *testing.T) {
	valid := func() []byte {
		dir := t.TempDir()
		f, _ := openTestFile(t, dir)
		f.Apply("p", breaker.Settings{Failures: 9}, breaker.Event{Kind: breaker.EventFailure})
		f.Close()
		b, _ := os.ReadFile(filepath.Join(dir, "p.breaker"))
		return b
	}()
	garbage := bytes.Repeat([]byte{0xA5}, state.FileSize)
	wrongMagic := bytes.Clone(valid)
	wrongMagic[0] ^= 0xFF
	badLength := bytes.Clone(valid)
	badLength[wLen*8] = 0xFF
	halfWritten := bytes.Clone(valid)
	halfWritten[wSeq*8] |= 1
	tests := []struct {
		name    string
		content []byte
	}{
		{"garbage", garbage},
		{"wrong magic", wrongMagic},
		{"bad length", badLength},
		{"cut short", valid[:100]},
		{"empty", nil},
		{"writer died mid-write", halfWritten},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "p.breaker")
			os.WriteFile(path, tt.content, 0o600)
			f, lb := openTestFile(t, dir)
			for range 3 {
				rec, err := f.Load("p")
				if err != nil || !reflect.DeepEqual(rec, breaker.Record{}) {
					t.Fatalf("Load = %+v, %v; want the closed zero record", rec, err)
				}
			}
			if n := strings.Count(lb.String(), "damaged state file"); n != 1 {
				t.Fatalf("%d warnings, want 1; log:\n%s", n, lb)
			}
			_, rec, err := f.Apply("p", breaker.Settings{Failures: 9}, breaker.Event{Kind: breaker.EventFailure})
			if err != nil || rec.Failures != 1 {
				t.Fatalf("Apply = %+v, %v; want 1 failure", rec, err)
			}
			other, _ := openTestFile(t, dir)
			if got, _ := other.Load("p"); got.Failures != 1 {
				t.Fatalf("after rewrite another store loads %+v, want 1 failure", got)
			}
			if st, _ := os.Stat(path); st.Size() != state.FileSize {
				t.Fatalf("rewritten file is %d bytes, want %d", st.Size(), state.FileSize)
			}
		})
	}
}

func TestFileTruncatedWhileMapped(t *testing.T) {
	dir := t.TempDir()
	f, lb := openTestFile(t, dir)
	s := breaker.Settings{Failures: 1, Cool: time.Hour}
	if _, _, err := f.Apply("p", s, breaker.Event{Kind: breaker.EventFailure}); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "p.breaker"), 0); err != nil {
		t.Fatal(err)
	}
	rec, err := f.Load("p")
	if err != nil || rec.State != breaker.Closed {
		t.Fatalf("Load after truncation = %+v, %v; want closed", rec, err)
	}
	if !strings.Contains(lb.String(), "cut short") {
		t.Fatalf("no warning about the cut file; log:\n%s", lb)
	}
	if _, rec, err = f.Apply("p", s, breaker.Event{Kind: breaker.EventFailure}); err != nil || rec.State != breaker.Open {
		t.Fatalf("Apply after truncation = %+v, %v; want open", rec, err)
	}
}

func TestFileRemovedIsRecreated(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	s := breaker.Settings{Failures: 1, Cool: time.Hour}
	a.Apply("p", s, breaker.Event{Kind: breaker.EventFailure})
	os.Remove(filepath.Join(dir, "p.breaker"))
	if _, _, err := a.Apply("p", s, breaker.Event{Kind: breaker.EventReset}); err != nil {
		t.Fatal(err)
	}
	a.Apply("p", s, breaker.Event{Kind: breaker.EventTrip})
	b, _ := openTestFile(t, dir)
	if got, _ := b.Load("p"); got.State != breaker.Open || got.Reason != "manual" {
		t.Fatalf("a new store loads %+v, want the trip made after the file was removed", got)
	}
}

func TestFileConcurrentFailuresNoLostUpdate(t *testing.T) {
	dir := t.TempDir()
	s := breaker.Settings{Failures: 1000}
	var wg sync.WaitGroup
	for range 4 {
		f, _ := openTestFile(t, dir)
		b := breaker.New("p", s, f)
		for range 25 {
			wg.Go(func() {
				p, _ := b.Allow()
				p.Done(breaker.Failure, 0)
			})
		}
	}
	wg.Wait()
	f, _ := openTestFile(t, dir)
	if got, _ := f.Load("p"); got.Failures != 100 {
		t.Fatalf("failures = %d, want 100", got.Failures)
	}
}

func TestFileClosedFastPathNoSyscallNoWriteNoAlloc(t *testing.T) {
	for _, withFile := range []bool{false, true} {
		t.Run(map[bool]string{false: "no file", true: "with a file"}[withFile], func(t *testing.T) {
			dir := t.TempDir()
			f, _ := openTestFile(t, dir)
			b := breaker.New("openai", breaker.Settings{Slow: breaker.Slow{Threshold: time.Minute}}, f)
			if withFile { // a breaker that opened once keeps its file, closed
				f.Apply(b.Name(), b.Settings(), breaker.Event{Kind: breaker.EventTrip})
				b.Reset()
			}
			p, _ := b.Allow() // reads the file, or finds there is none
			p.Done(breaker.Success, time.Millisecond)
			path := filepath.Join(dir, "openai.breaker")
			before, _ := os.ReadFile(path)
			stBefore, errBefore := os.Stat(path)
			if (errBefore == nil) != withFile {
				t.Fatalf("state file present = %v, want %v", errBefore == nil, withFile)
			}
			calls := state.Syscalls()
			allocs := testing.AllocsPerRun(10000, func() {
				p, err := b.Allow()
				if err != nil {
					t.Fatal(err)
				}
				p.Done(breaker.Success, time.Millisecond)
			})
			if allocs != 0 {
				t.Errorf("%v allocations per closed Allow+Done, want 0", allocs)
			}
			if n := state.Syscalls() - calls; n != 0 {
				t.Errorf("%d system calls over 10000 closed Allow+Done, want 0", n)
			}
			after, _ := os.ReadFile(path)
			stAfter, errAfter := os.Stat(path)
			if (errAfter == nil) != withFile {
				t.Fatalf("after closed successes, state file present = %v, want %v", errAfter == nil, withFile)
			}
			if withFile && (!bytes.Equal(before, after) || !stAfter.ModTime().Equal(stBefore.ModTime())) {
				t.Errorf("the state file changed over closed successes")
			}
		})
	}
}

func TestFileClosedStore(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	f.Apply("p", breaker.Settings{}, breaker.Event{Kind: breaker.EventFailure})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load("p"); err == nil {
		t.Error("Load after Close: no error")
	}
	if _, _, err := f.Apply("p", breaker.Settings{}, breaker.Event{Kind: breaker.EventFailure}); err == nil {
		t.Error("Apply after Close: no error")
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func BenchmarkFileClosedAllowDone(b *testing.B) {
	f, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	br := breaker.New("openai", breaker.Settings{Slow: breaker.Slow{Threshold: 15 * time.Second}}, f)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			p.Done(breaker.Success, time.Millisecond)
		}
	})
}

func BenchmarkFileClosedAllowDoneSerial(b *testing.B) {
	f, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	br := breaker.New("openai", breaker.Settings{Slow: breaker.Slow{Threshold: 15 * time.Second}}, f)
	b.ReportAllocs()
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Done(breaker.Success, time.Millisecond)
	}
}

func BenchmarkFileFailure(b *testing.B) {
	f, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	s := breaker.Settings{Failures: 1 << 30}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := f.Apply("openai", s, breaker.Event{Kind: breaker.EventFailure}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFileAllowFailure is a failure as a breaker sees one: Allow
// loads the record, Done applies the failure.
func BenchmarkFileAllowFailure(b *testing.B) {
	f, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	br := breaker.New("openai", breaker.Settings{Failures: 1 << 30}, f)
	b.ReportAllocs()
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Done(breaker.Failure, time.Millisecond)
	}
}
