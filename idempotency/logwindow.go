package idempotency

import (
	"fmt"
	"os"
)

// A shard appends its records through a window: the part of its log from
// the page that holds the committed end, as long as a quarter of the log
// before it, from 16 KiB to 64 KiB, seen through a shared mapping of the
// next 256 KiB of the log (reach) within which the window moves on. A
// record that fits in the window is copied into it, so a Keep makes no
// system call but its flock's two, where a write call ran a write's checks
// and dirtied the file's inode at every record. The pages a window gains
// are made writable in one call as it moves on (on Linux; elsewhere each
// faults at its first write), and a page faults again once it was written
// back. What the window shows is the page cache, which other processes
// read and write with read and write calls, or through windows of their
// own: the table's change, under the same flock, commits the record as it
// did one written with a write call.
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

// reach is how much of a log one mapping of a window covers. The window
// moves on within it by extending the log, with no new mapping, so that
// a log is mapped again once per 256 KiB of records rather than at every
// window: letting go of a mapping costs every thread of the process a
// flush of its address translations, dear on a virtual machine.
const reach = 256 << 10

// window is a shard's mapped window on its open log.
type window struct {
	mem []byte // a mapping of reach bytes of the log, from at
	at  int64  // the log offset mem starts at
	end int64  // where the window ends: the log is extended with zeros to here
}

// put copies rec into the log at off through w, moving w on over off
// (and extending the log) when it does not show off..off+len(rec). It
// reports false when rec must be written with a write call instead: too
// large for a window, the log could not be extended or mapped, or no
// window is used here (windowSupported).
func (w *window) put(log *os.File, rec []byte, off int64) bool {
	if !windowSupported {
		return false
	}
	if off < w.at || off+int64(len(rec)) > w.end {
		from := off &^ int64(os.Getpagesize()-1)
		to := from + windowLen(from)
		if off+int64(len(rec)) > to || w.move(log, from, to) != nil {
			return false
		}
	}
	copy(w.mem[off-w.at:], rec)
	return true
}

// move makes w show log from from to to, multiples of the page size: it
// maps reach bytes of log from from when its mapping does not cover them
// (a mapping may run past the end of the file; no byte past it is
// touched), extends log with zeros to to, and makes the pages the window
// gains writable at once (populate).
func (w *window) move(log *os.File, from, to int64) error {
	if from < w.at || to > w.at+int64(len(w.mem)) {
		w.unmap()
		mem, err := mmapAt(log, from, reach)
		if err != nil {
			return err
		}
		w.mem, w.at = mem, from
	}
	info, err := log.Stat()
	if err != nil {
		return err
	}
	if info.Size() < from { // cut short by someone else: not extended with zeros
		return fmt.Errorf("idempotency: answer log %s is shorter than its committed end", log.Name())
	}
	if info.Size() < to {
		if _, err := log.WriteAt(zeros[:to-info.Size()], info.Size()); err != nil {
			return fmt.Errorf("idempotency: extend answer log: %w", err)
		}
	}
	populate(w.mem[max(w.end, from)-w.at : to-w.at])
	w.end = to
	return nil
}

// unmap lets go of the window.
func (w *window) unmap() {
	if w.mem != nil {
		munmap(w.mem)
		*w = window{}
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
