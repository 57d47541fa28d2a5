//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package state

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
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

func TestOpenFileRefusesBadDirs(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plain")
	os.WriteFile(file, nil, 0o600)
	for _, dir := range []string{"", file} {
		if f, err := OpenFile(dir, FileOptions{}); err == nil {
			f.Close()
			t.Errorf("OpenFile(%q): no error", dir)
		} else if !strings.HasPrefix(err.Error(), "state: ") {
			t.Errorf("OpenFile(%q): %v, want a state: error", dir, err)
		}
	}
}
