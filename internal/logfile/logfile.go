// Package logfile is the attempt log's file: an append-only writer of whole
// lines that can be reopened after logrotate renamed the file, and that
// keeps serving calls when the disk is full.
//
// Every line reaches the file in one write(2) on a descriptor opened with
// O_APPEND, so concurrent writers (goroutines or processes) never
// interleave, and a file truncated in place (logrotate's copytruncate) is
// written from its new end, without a hole of NUL bytes.
//
// A failed write is counted (Errors), said once on the logger when writing
// starts to fail and once when it works again, and returned to the caller,
// who may ignore it: it never blocks or retries. A write that failed part
// way leaves a torn line; the next line then starts with "\n", so the torn
// one never corrupts it.
package logfile

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// File is an attempt log: a file, or a plain writer such as standard
// output. It is safe for concurrent use.
type File struct {
	path   string // "" when the writer cannot be reopened
	logger *slog.Logger

	mu      sync.Mutex
	w       io.Writer
	closer  io.Closer // nil when the writer is not ours to close
	torn    bool      // the last write stopped part way through a line
	failing bool      // the last write failed
	lost    uint64    // lines lost since writing started to fail
	buf     []byte    // "\n" + line after a torn write

	errors atomic.Uint64
}

// ErrNotReopenable is returned by Reopen for a File made by New.
var ErrNotReopenable = errors.New("logfile: this log is not a file of its own and cannot be reopened")

// Open opens path for appending, creating it (mode 0600) and its
// directory (mode 0700) when missing. Messages about failing writes go to
// logger; if nil, slog.Default().
func Open(path string, logger *slog.Logger) (*File, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	l := newFile(f, logger)
	l.path, l.closer = path, f
	return l, nil
}

// New returns a File that writes to w (standard output, say). It cannot be
// reopened and Close does not close w. Messages about failing writes go to
// logger; if nil, slog.Default().
func New(w io.Writer, logger *slog.Logger) *File {
	return newFile(w, logger)
}

func newFile(w io.Writer, logger *slog.Logger) *File {
	if logger == nil {
		logger = slog.Default()
	}
	return &File{w: w, logger: logger}
}

func openAppend(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("log.attempts: %v (choose a writable path)", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log.attempts: %v (choose a writable path)", err)
	}
	return f, nil
}

// Write appends p, one whole line ending in "\n", with a single write.
// After a write that stopped part way, p is written as "\n" + p. A failure
// is counted and returned; it is said on the logger only when it is the
// first of a run.
func (l *File) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := p
	if l.torn {
		l.buf = append(append(l.buf[:0], '\n'), p...)
		out = l.buf
	}
	n, err := l.w.Write(out)
	if err == nil && n < len(out) {
		err = io.ErrShortWrite
	}
	if err != nil {
		l.fail(n, err)
		return max(n-(len(out)-len(p)), 0), err
	}
	l.torn = false
	if l.failing {
		l.failing = false
		l.logger.Warn("attempt log: writing works again", "path", l.name(), "lost_lines", l.lost)
		l.lost = 0
	}
	return len(p), nil
}

// fail records a write that failed after putting n bytes.
func (l *File) fail(n int, err error) {
	l.errors.Add(1)
	l.lost++
	if n > 0 {
		l.torn = true
	}
	if !l.failing {
		l.failing = true
		l.logger.Error("attempt log: writing failed; lines are lost until it recovers (sluice_attempt_log_errors_total counts them)",
			"path", l.name(), "err", err)
	}
}

func (l *File) name() string {
	if l.path == "" {
		return "-"
	}
	return l.path
}

// Errors returns how many lines failed to be written since the File was
// made.
func (l *File) Errors() uint64 { return l.errors.Load() }

// Path returns the file's path, or "" for a File made by New.
func (l *File) Path() string { return l.path }

// Reopen opens the path again and writes there from now on: after
// logrotate renamed the file, the next line goes to a new file at the
// path. When the open fails, the File keeps writing where it did and the
// error says why. A File made by New returns ErrNotReopenable.
func (l *File) Reopen() error {
	if l.path == "" {
		return ErrNotReopenable
	}
	f, err := openAppend(l.path)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.closer
	l.w, l.closer = f, f
	l.torn = false // a new file starts on a line of its own
	l.mu.Unlock()
	return closeSynced(old)
}

// Close flushes the file to disk and closes it. It does not close the
// writer of a File made by New.
func (l *File) Close() error {
	l.mu.Lock()
	c := l.closer
	l.closer = nil
	l.w = io.Discard
	l.mu.Unlock()
	return closeSynced(c)
}

func closeSynced(c io.Closer) error {
	if c == nil {
		return nil
	}
	if f, ok := c.(*os.File); ok {
		f.Sync()
	}
	return c.Close()
}
