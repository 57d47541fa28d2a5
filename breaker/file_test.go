//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package breaker

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
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

func openTestFile(t *testing.T, dir string) (*File, *logBuffer) {
	t.Helper()
	var lb logBuffer
	f, err := OpenFile(dir, FileOptions{Logger: slog.New(slog.NewTextHandler(&lb, nil))})
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
	s := Settings{Failures: 2, Cool: time.Hour}
	name := "openai/gpt-4o"
	for i := range 2 {
		rec, err := a.Apply(name, s, Event{Kind: EventFailure})
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.Load(name)
		if err != nil || !reflect.DeepEqual(got, rec) {
			t.Fatalf("after failure %d: other store loads %+v, %v; want %+v", i+1, got, err, rec)
		}
	}
	got, _ := b.Load(name)
	if got.State != Open || got.Reason != "failures" || got.Transitions != 1 {
		t.Fatalf("record %+v, want open for failures after one transition", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "openai%2Fgpt-4o.breaker")); err != nil {
		t.Fatalf("state file: %v", err)
	}
}

func TestFileAgreesWithMemory(t *testing.T) {
	s := Settings{Failures: 3, Cool: time.Hour, Lease: time.Hour,
		Slow: Slow{Threshold: time.Second, Count: 2, Window: time.Hour}}
	events := []Event{
		{Kind: EventFailure}, {Kind: EventSuccess}, {Kind: EventFailure}, {Kind: EventIgnored},
		{Kind: EventSuccess, Slow: true}, {Kind: EventSuccess, Slow: true},
		{Kind: Acquire, Token: 5}, {Kind: EventFailure}, {Kind: EventReset},
		{Kind: EventTrip}, {Kind: EventSuccess}, {Kind: EventReset}, {Kind: EventFailure},
	}
	f, _ := openTestFile(t, t.TempDir())
	m := NewMemory()
	for i, e := range events {
		want, _ := m.Apply("p", s, e)
		got, err := f.Apply("p", s, e)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != want.State || got.Failures != want.Failures || len(got.Slow) != len(want.Slow) ||
			got.Reason != want.Reason || got.Transitions != want.Transitions {
			t.Fatalf("event %d %+v: file %+v, memory %+v", i, e, got, want)
		}
	}
}

func TestFileCapsSlowCount(t *testing.T) {
	f, _ := openTestFile(t, t.TempDir())
	s := Settings{Slow: Slow{Threshold: time.Second, Count: 40, Window: time.Hour}}
	b := New("p", s, f)
	for i := range MaxStoredSlow {
		if got := state(t, b); got != Closed {
			t.Fatalf("after %d slow successes: %v, want closed", i, got)
		}
		p, _ := b.Allow()
		p.Done(Success, 2*time.Second)
	}
	if got := state(t, b); got != Open {
		t.Fatalf("after %d slow successes with Count 40: %v, want open (Count capped)", MaxStoredSlow, got)
	}
}

func TestFilePermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f, _ := openTestFile(t, dir)
	if _, err := f.Apply("openai/x", Settings{}, Event{Kind: EventFailure}); err != nil {
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
	if got := st.Size(); got != fileSize {
		t.Errorf("file size %d, want %d", got, fileSize)
	}

	open := t.TempDir()
	os.Chmod(open, 0o755)
	openTestFile(t, open)
	if st, _ := os.Stat(open); st.Mode().Perm() != 0o700 {
		t.Errorf("existing 0755 dir left at %v, want made 0700", st.Mode().Perm())
	}
}

func TestOpenFileRefusesBadDirs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(file, nil, 0o600)
	for _, dir := range []string{"", file} {
		if f, err := OpenFile(dir, FileOptions{}); err == nil {
			f.Close()
			t.Errorf("OpenFile(%q): no error", dir)
		} else if !strings.HasPrefix(err.Error(), "breaker: ") {
			t.Errorf("OpenFile(%q): %v, want a breaker: error", dir, err)
		}
	}
}

func TestFileList(t *testing.T) {
	dir := t.TempDir()
	f, _ := openTestFile(t, dir)
	names := []string{"openai", "openai/gpt-4o", "Anthropic", ".dot"}
	for _, n := range names {
		if _, err := f.Apply(n, Settings{Failures: 1}, Event{Kind: EventFailure}); err != nil {
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
	if got := Names(list); !reflect.DeepEqual(got, want) {
		t.Fatalf("List names %q, want %q", got, want)
	}
	for n, r := range list {
		if r.State != Open {
			t.Errorf("%s: %v, want open", n, r.State)
		}
	}
}

func TestFileDamagedReadsClosedAndIsRewritten(t *testing.T) {
	valid := func() []byte {
		dir := t.TempDir()
		f, _ := openTestFile(t, dir)
		f.Apply("p", Settings{Failures: 9}, Event{Kind: EventFailure})
		f.Close()
		b, _ := os.ReadFile(filepath.Join(dir, "p.breaker"))
		return b
	}()
	garbage := bytes.Repeat([]byte{0xA5}, fileSize)
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
				if err != nil || !reflect.DeepEqual(rec, Record{}) {
					t.Fatalf("Load = %+v, %v; want the closed zero record", rec, err)
				}
			}
			if n := strings.Count(lb.String(), "damaged state file"); n != 1 {
				t.Fatalf("%d warnings, want 1; log:\n%s", n, lb)
			}
			rec, err := f.Apply("p", Settings{Failures: 9}, Event{Kind: EventFailure})
			if err != nil || rec.Failures != 1 {
				t.Fatalf("Apply = %+v, %v; want 1 failure", rec, err)
			}
			other, _ := openTestFile(t, dir)
			if got, _ := other.Load("p"); got.Failures != 1 {
				t.Fatalf("after rewrite another store loads %+v, want 1 failure", got)
			}
			if st, _ := os.Stat(path); st.Size() != fileSize {
				t.Fatalf("rewritten file is %d bytes, want %d", st.Size(), fileSize)
			}
		})
	}
}

func TestFileTruncatedWhileMapped(t *testing.T) {
	dir := t.TempDir()
	f, lb := openTestFile(t, dir)
	s := Settings{Failures: 1, Cool: time.Hour}
	if _, err := f.Apply("p", s, Event{Kind: EventFailure}); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, "p.breaker"), 0); err != nil {
		t.Fatal(err)
	}
	rec, err := f.Load("p")
	if err != nil || rec.State != Closed {
		t.Fatalf("Load after truncation = %+v, %v; want closed", rec, err)
	}
	if !strings.Contains(lb.String(), "cut short") {
		t.Fatalf("no warning about the cut file; log:\n%s", lb)
	}
	if rec, err = f.Apply("p", s, Event{Kind: EventFailure}); err != nil || rec.State != Open {
		t.Fatalf("Apply after truncation = %+v, %v; want open", rec, err)
	}
}

func TestFileRemovedIsRecreated(t *testing.T) {
	dir := t.TempDir()
	a, _ := openTestFile(t, dir)
	s := Settings{Failures: 1, Cool: time.Hour}
	a.Apply("p", s, Event{Kind: EventFailure})
	os.Remove(filepath.Join(dir, "p.breaker"))
	if _, err := a.Apply("p", s, Event{Kind: EventReset}); err != nil {
		t.Fatal(err)
	}
	a.Apply("p", s, Event{Kind: EventTrip})
	b, _ := openTestFile(t, dir)
	if got, _ := b.Load("p"); got.State != Open || got.Reason != "manual" {
		t.Fatalf("a new store loads %+v, want the trip made after the file was removed", got)
	}
}

func TestFileTransform(t *testing.T) {
	dir := t.TempDir()
	stores := []*File{}
	for range 2 {
		f, _ := openTestFile(t, dir)
		stores = append(stores, f)
	}
	incr := func(old []byte) ([]byte, error) {
		n := 0
		if len(old) == 8 {
			n = int(le64(old))
		}
		out := make([]byte, 8)
		putLE64(out, uint64(n+1))
		return out, nil
	}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			if err := stores[i%2].Transform("spend/day", incr); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := stores[0].Snapshot("spend/day")
	if err != nil || len(got) != 8 || le64(got) != 100 {
		t.Fatalf("Snapshot = %v, %v; want the counter at 100", got, err)
	}
	refuse := errors.New("over the cap")
	if err := stores[1].Transform("spend/day", func([]byte) ([]byte, error) { return nil, refuse }); err != refuse {
		t.Fatalf("Transform returned %v, want fn's error", err)
	}
	if err := stores[1].Transform("spend/day", func([]byte) ([]byte, error) { return make([]byte, payloadMax+1), nil }); err == nil {
		t.Fatal("an oversized record was accepted")
	}
	if got, _ := stores[1].Snapshot("spend/day"); le64(got) != 100 {
		t.Fatalf("a refused Transform changed the record to %v", got)
	}
	if got, err := stores[1].Snapshot("never"); got != nil || err != nil {
		t.Fatalf("Snapshot of a new record = %v, %v; want nil, nil", got, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "spend%2Fday.record")); err != nil {
		t.Fatal(err)
	}
}

func TestFileConcurrentFailuresNoLostUpdate(t *testing.T) {
	dir := t.TempDir()
	s := Settings{Failures: 1000}
	var wg sync.WaitGroup
	for range 4 {
		f, _ := openTestFile(t, dir)
		b := New("p", s, f)
		for range 25 {
			wg.Go(func() {
				p, _ := b.Allow()
				p.Done(Failure, 0)
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
			b := New("openai", Settings{Slow: Slow{Threshold: time.Minute}}, f)
			if withFile { // a breaker that opened once keeps its file, closed
				b.store.Apply(b.name, b.settings, Event{Kind: EventTrip})
				b.Reset()
			}
			p, _ := b.Allow() // reads the file, or finds there is none
			p.Done(Success, time.Millisecond)
			path := filepath.Join(dir, "openai.breaker")
			before, _ := os.ReadFile(path)
			stBefore, errBefore := os.Stat(path)
			if (errBefore == nil) != withFile {
				t.Fatalf("state file present = %v, want %v", errBefore == nil, withFile)
			}
			calls := fileSyscalls.Load()
			allocs := testing.AllocsPerRun(10000, func() {
				p, err := b.Allow()
				if err != nil {
					t.Fatal(err)
				}
				p.Done(Success, time.Millisecond)
			})
			if allocs != 0 {
				t.Errorf("%v allocations per closed Allow+Done, want 0", allocs)
			}
			if n := fileSyscalls.Load() - calls; n != 0 {
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
	f.Apply("p", Settings{}, Event{Kind: EventFailure})
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Load("p"); err == nil {
		t.Error("Load after Close: no error")
	}
	if _, err := f.Apply("p", Settings{}, Event{Kind: EventFailure}); err == nil {
		t.Error("Apply after Close: no error")
	}
	if err := f.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func BenchmarkFileClosedAllowDone(b *testing.B) {
	f, err := OpenFile(b.TempDir(), FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	br := New("openai", Settings{Slow: Slow{Threshold: 15 * time.Second}}, f)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := br.Allow()
			if err != nil {
				b.Fatal(err)
			}
			p.Done(Success, time.Millisecond)
		}
	})
}

func BenchmarkFileClosedAllowDoneSerial(b *testing.B) {
	f, err := OpenFile(b.TempDir(), FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	br := New("openai", Settings{Slow: Slow{Threshold: 15 * time.Second}}, f)
	b.ReportAllocs()
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Done(Success, time.Millisecond)
	}
}

func BenchmarkFileFailure(b *testing.B) {
	f, err := OpenFile(b.TempDir(), FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	s := Settings{Failures: 1 << 30}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := f.Apply("openai", s, Event{Kind: EventFailure}); err != nil {
			b.Fatal(err)
		}
	}
}
