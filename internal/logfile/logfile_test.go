package logfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logBuffer collects the File's messages.
func logBuffer() (*slog.Logger, *bytes.Buffer) {
	var buf bytes.Buffer
	return slog.New(slog.NewTextHandler(&buf, nil)), &buf
}

func line(i int) []byte {
	return fmt.Appendf(nil, `{"ts":"2026-01-01T00:00:00.000Z","request_id":"r%d","attempt":1}`+"\n", i)
}

func TestFullDeviceIsCountedAndSaidOnce(t *testing.T) {
	logger, msgs := logBuffer()
	f, err := Open("/dev/full", logger)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer f.Close()
	const n = 800
	start := time.Now()
	var wg sync.WaitGroup
	var enospc sync.Map
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := f.Write(line(i)); errors.Is(err, syscall.ENOSPC) {
				enospc.Store(i, true)
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("%d failing writes took %v; a full disk must not slow calls", n, d)
	}
	if got := f.Errors(); got != n {
		t.Errorf("Errors() = %d, want %d (every lost line counted)", got, n)
	}
	got := 0
	enospc.Range(func(any, any) bool { got++; return true })
	if got != n {
		t.Errorf("%d writes returned ENOSPC, want %d", got, n)
	}
	if c := strings.Count(msgs.String(), "\n"); c != 1 || !strings.Contains(msgs.String(), "writing failed") || !strings.Contains(msgs.String(), "no space left") {
		t.Errorf("messages:\n%s\nwant exactly one line saying writing failed, with the reason", msgs)
	}
}

// faultyWriter fails its first fails writes, each after writing keep
// bytes, then works.
type faultyWriter struct {
	buf   bytes.Buffer
	fails int
	keep  int
}

func (w *faultyWriter) Write(p []byte) (int, error) {
	if w.fails > 0 {
		w.fails--
		n := min(w.keep, len(p))
		w.buf.Write(p[:n])
		return n, syscall.ENOSPC
	}
	return w.buf.Write(p)
}

func TestTornLineDoesNotCorruptTheNext(t *testing.T) {
	logger, _ := logBuffer()
	w := &faultyWriter{fails: 1, keep: 20}
	f := New(w, logger)
	for i := range 3 {
		f.Write(line(i))
	}
	lines := strings.Split(strings.TrimSuffix(w.buf.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("file:\n%s\nwant the torn fragment and two whole lines, each on its own", w.buf.String())
	}
	if lines[0] != string(line(0)[:20]) {
		t.Errorf("first line %q, want the torn fragment", lines[0])
	}
	for i, l := range lines[1:] {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil || v["request_id"] != fmt.Sprintf("r%d", i+1) {
			t.Errorf("line after the torn one: %q (%v), want r%d whole", l, err, i+1)
		}
	}
	if f.Errors() != 1 {
		t.Errorf("Errors() = %d, want 1", f.Errors())
	}
}

func TestFaultThatClearsIsSaidTwice(t *testing.T) {
	logger, msgs := logBuffer()
	w := &faultyWriter{fails: 7}
	f := New(w, logger)
	for i := range 20 {
		_, err := f.Write(line(i))
		if (i < 7) != (err != nil) {
			t.Errorf("write %d: err %v", i, err)
		}
	}
	if f.Errors() != 7 {
		t.Errorf("Errors() = %d, want 7", f.Errors())
	}
	out := msgs.String()
	if strings.Count(out, "\n") != 2 || strings.Count(out, "writing failed") != 1 || strings.Count(out, "works again") != 1 || !strings.Contains(out, "lost_lines=7") {
		t.Errorf("messages:\n%s\nwant one 'failed' line and one 'works again' line with lost_lines=7", out)
	}
	if got := strings.Count(w.buf.String(), "\n"); got != 13 || strings.HasPrefix(w.buf.String(), "\n") {
		t.Errorf("file has %d lines, want the 13 written after the fault, no blank line:\n%s", got, w.buf.String())
	}
}

func TestReopenAfterRename(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "attempts.jsonl")
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write(line(1))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	f.Write(line(2)) // still the renamed file: not reopened yet
	if err := f.Reopen(); err != nil {
		t.Fatal(err)
	}
	f.Write(line(3))
	old, _ := os.ReadFile(path + ".1")
	cur, _ := os.ReadFile(path)
	if string(old) != string(line(1))+string(line(2)) || string(cur) != string(line(3)) {
		t.Errorf("rotated file %q, new file %q", old, cur)
	}
}

func TestCopyTruncateLeavesNoHole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "attempts.jsonl")
	f, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range 5 {
		f.Write(line(i))
	}
	if err := os.Truncate(path, 0); err != nil { // what copytruncate does after the copy
		t.Fatal(err)
	}
	f.Write(line(9))
	got, _ := os.ReadFile(path)
	if bytes.IndexByte(got, 0) >= 0 || string(got) != string(line(9)) {
		t.Errorf("after truncation the file holds %q, want only the new line from offset 0", got)
	}
}

func TestReopenNeedsAPath(t *testing.T) {
	f := New(io.Discard, nil)
	if err := f.Reopen(); !errors.Is(err, ErrNotReopenable) {
		t.Errorf("Reopen of a plain writer: %v, want ErrNotReopenable", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "f", "\x00"), nil); err == nil || !strings.Contains(err.Error(), "log.attempts") {
		t.Errorf("Open of a bad path: %v, want an error naming log.attempts", err)
	}
}
