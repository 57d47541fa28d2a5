package idempotency

import (
	"fmt"
	"os"
)

// A shard appends its records through a window: the part of its log from
// the page that holds the committed end, mapped shared, as long as a
// quarter of the log before it, from 16 KiB to 64 KiB. A record that fits
// in the window is copied into it, so a Keep makes no system call but its
// flock's two: the kernel takes a fault at a page's first write (and
// again once the page was written back), where a write call ran a write's
// checks and dirtied the file's inode at every record. What the window
// shows is the page cache, which other processes read and write with read
// and write calls, or through windows of their own: the table's change,
// under the same flock, commits the record as it did one written with a
// write call.
//
// The log is first extended with written zeros to the window's end (as a
// lock file is), so the blocks are the file's before a byte lands in the
// mapping: a full disk fails that write, and the record is then written
// with a write call, which fails as it did before, rather than the page
// faulting. A log thus runs in zeros past its committed end, up to 16 KiB
// or a quarter of its length (64 KiB at most), which no reader reads (they
// read to the committed end, and a log found again is read to its last
// whole record). A record that does not fit in a window is written with a
// write call.
const (
	windowMin = 16 << 10
	windowMax = 64 << 10
)

// windowLen is the length of a window from at, a multiple of the page
// size: a quarter of the log before it, in pages, within the bounds.
func windowLen(at int64) int64 {
	return min(max(at/4&^int64(os.Getpagesize()-1), windowMin), windowMax)
}

// zeros is what a log is extended with; it is only read.
var zeros [windowMax]byte

// window is a shard's mapped window on its open log.
type window struct {
	mem []byte
	at  int64 // the log offset mem starts at
}

// put copies rec into the log at off through w, mapping w again over off
// (and extending the log) when it does not show off..off+len(rec). It
// reports false when rec must be written with a write call instead: too
// large for a window, the log could not be extended or mapped, or no
// window is used here (windowSupported).
func (w *window) put(log *os.File, rec []byte, off int64) bool {
	if !windowSupported {
		return false
	}
	if off < w.at || off+int64(len(rec)) > w.at+int64(len(w.mem)) {
		at := off &^ int64(os.Getpagesize()-1)
		if off+int64(len(rec)) > at+windowLen(at) || w.remap(log, at) != nil {
			return false
		}
	}
	copy(w.mem[off-w.at:], rec)
	return true
}

// remap maps w over the windowLen(at) bytes of log from at, a multiple
// of the page size, first extending log with zeros to their end.
func (w *window) remap(log *os.File, at int64) error {
	w.unmap()
	info, err := log.Stat()
	if err != nil {
		return err
	}
	if info.Size() < at { // cut short by someone else: not extended with zeros
		return fmt.Errorf("idempotency: answer log %s is shorter than its committed end", log.Name())
	}
	n := windowLen(at)
	if end := at + n; info.Size() < end {
		if _, err := log.WriteAt(zeros[:end-info.Size()], info.Size()); err != nil {
			return fmt.Errorf("idempotency: extend answer log: %w", err)
		}
	}
	mem, err := mmapAt(log, at, int(n))
	if err != nil {
		return err
	}
	w.mem, w.at = mem, at
	return nil
}

// unmap lets go of the window.
func (w *window) unmap() {
	if w.mem != nil {
		munmap(w.mem)
		w.mem, w.at = nil, 0
	}
}

// closeLog closes s's open log, if any, and lets go of its window.
func (s *shard) closeLog() {
	s.win.unmap()
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
}
