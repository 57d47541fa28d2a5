package state

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// FileOptions configures a File. The zero value is usable.
type FileOptions struct {
	// Logger receives the File's warnings: a damaged state file, a writer
	// that died mid-write. If nil, slog.Default() is used.
	Logger *slog.Logger

	// MaxOpen is the most state files the File holds open and mapped at
	// once, of every kind together: one descriptor and one page of memory
	// each. When a file must be opened and MaxOpen are, the one least
	// recently used is closed first (and reopened at its next use). If
	// zero, 64.
	MaxOpen int
}

// File is a directory of small named records shared by every process on
// one host that opens it. It is safe for concurrent use.
//
// Each record is one file, "<escaped name><kind's extension>", of FileSize
// bytes: a magic number, a sequence counter, a generation, a length and at
// most MaxRecord bytes of record. In a name, lowercase ASCII letters,
// digits, '-', '_' and '.' (not first) stand for themselves and every other
// byte is written %XX, so the record "openai/gpt-4o" of the kind ".breaker"
// is "openai%2Fgpt-4o.breaker". The directory is made private (0700) and
// the files are 0600. The words are in the machine's byte order: a file
// moved to another kind of machine reads as damaged.
//
// The File's own records (Transform, Snapshot, RemoveRecords) are of the
// kind ".record"; a user of the File adds kinds of its own with Kind, each
// with its extension and its decoding, and all kinds share the File's open
// files and its MaxOpen budget.
//
// A name with no record has no file: its file is created at its first
// write and removed when it is transformed to nothing. A process maps each
// file it uses into memory, shared. Kind.Load reads a record through that
// mapping with a sequence lock: a writer makes the counter odd, writes, and
// makes it even again; a reader retries until it saw an even, unchanged
// counter, so it never sees half a write and it takes no lock, makes no
// system call and writes nothing. A record unchanged since the last Load
// costs six atomic loads, a name with no file two. Transform takes the
// file's flock, reads the record, lets the caller's function change it,
// writes it under the sequence lock and unlocks. A change is therefore
// seen by every other process at its next Load, at once; so are a file's
// creation and removal, which each process learns from a shared page of
// counters, ".generations", bumped by whoever creates or removes a state
// file.
//
// A state file that is cut short, filled with garbage or left half-written
// by a writer killed mid-write reads as no record, a warning is logged
// once, and the file is rewritten at the record's next change. The File
// needs flock to hold between every process that shares the directory:
// OpenFile refuses a directory on NFS or SMB/CIFS, where it would not hold
// across hosts.
//
// Bounds: a process holds at most FileOptions.MaxOpen state files open and
// mapped (64 by default, the least recently used closed first), plus one
// mapping of the generation page and one reserved range of MaxOpen pages.
// Its table of names keeps those in recent use. A state file removed or
// replaced is let go of (descriptor closed, page released) at the next use
// of its name; do not remove ".generations" while processes use the
// directory, and change records through the File rather than by removing
// files.
type File struct {
	dir     string
	log     *slog.Logger
	gens    *genPage
	records *Kind
	nslots  atomic.Int64
	pruneAt atomic.Int64
	closed  atomic.Bool

	mu     sync.Mutex // guards what follows, and Close
	kinds  []*Kind    // every kind made, records first
	region region
	pages  []*slot // the slot holding each page of the region, nil if free
	hand   int     // where the search for a page to take resumes
}

// ErrClosed is the error of an operation on a File after its Close.
var ErrClosed = errors.New("state: file is closed")

// fileSyscalls counts the File's entries into the kernel (open, map, lock,
// unlock, stat, truncate, remove), so tests can show the fast path makes
// none.
var fileSyscalls atomic.Uint64

// Syscalls returns how many system calls (open, map, lock, unlock, stat,
// truncate, remove) every File of this process has made so far: what a
// user of a File shows its fast path makes none of.
func Syscalls() uint64 { return fileSyscalls.Load() }

// defaultMaxOpen is FileOptions.MaxOpen's default.
const defaultMaxOpen = 64

// OpenFile opens the state directory dir, creating it (0700) if needed.
// It refuses a directory on a network file system where file locks do not
// hold across hosts.
func OpenFile(dir string, opts FileOptions) (*File, error) {
	if dir == "" {
		return nil, errors.New("state: empty state directory: name a directory for the file store")
	}
	if !fileStoreSupported {
		return nil, errors.New("state: the file store needs Linux, macOS or a BSD: use the memory or redis store")
	}
	if opts.MaxOpen < 0 {
		return nil, fmt.Errorf("state: MaxOpen %d is negative: give at least 1, or 0 for the default", opts.MaxOpen)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state: create state directory: %w", err)
	}
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	if err := checkLocalFS(dir); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	maxOpen := opts.MaxOpen
	if maxOpen == 0 {
		maxOpen = defaultMaxOpen
	}
	gens, err := openGenerations(filepath.Join(dir, genFileName))
	if err != nil {
		return nil, err
	}
	reg, err := reserveRegion(maxOpen)
	if err != nil {
		gens.close()
		return nil, err
	}
	f := &File{dir: dir, log: log, gens: gens, region: reg, pages: make([]*slot, maxOpen)}
	f.records = newKind(f, recordExt, KindOptions{})
	f.kinds = []*Kind{f.records}
	f.pruneAt.Store(f.prunePoint(0))
	return f, nil
}

func privateDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("state: state directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("state: state directory %s is not a directory: name a directory", dir)
	}
	if st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("state: state directory %s is open to other users (%v) and cannot be made private (%v): choose a directory of your own", dir, st.Mode().Perm(), err)
	}
	return nil
}

// Dir returns the File's directory.
func (f *File) Dir() string { return f.dir }

// Transform atomically replaces the record called name, of the File's own
// kind ".record", by fn(old): see Kind.Transform.
func (f *File) Transform(name string, fn func(old []byte) ([]byte, error)) error {
	return f.records.Transform(name, fn)
}

// Snapshot returns the record called name, of the File's own kind
// ".record", as Transform last wrote it; nil if there is none. See
// Kind.Snapshot.
func (f *File) Snapshot(name string) ([]byte, error) {
	return f.records.Snapshot(name)
}

// RemoveRecords removes every record of the File's own kind ".record" for
// which drop returns true, and returns how many it removed. See
// Kind.RemoveRecords.
func (f *File) RemoveRecords(drop func(name string, rec []byte) bool) (int, error) {
	return f.records.RemoveRecords(drop)
}

// Close unmaps and closes the File's state files. Call it once nothing
// uses the File any more.
func (f *File) Close() error {
	f.mu.Lock()
	if f.closed.Swap(true) {
		f.mu.Unlock()
		return nil
	}
	held := make([]*slot, 0, len(f.pages))
	for _, s := range f.pages {
		if s != nil {
			held = append(held, s)
		}
	}
	f.mu.Unlock()
	var errs []error
	for _, s := range held {
		s.mu.Lock()
		if s.m != nil {
			s.view.Store(nil)
			s.drain()
			errs = append(errs, s.m.closeFile())
			s.m = nil
		}
		s.mu.Unlock()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	errs = append(errs, f.region.release(), f.gens.close())
	return errors.Join(errs...)
}

func (f *File) warnDamaged(s *slot, problem string) {
	if s.warned.CompareAndSwap(false, true) {
		f.log.Warn("state: damaged state file read as no record; it is rewritten at the next change",
			"file", s.path, "problem", problem)
	}
}

// String names the problem a read found.
func (st readStatus) String() string {
	switch st {
	case readOK:
		return "ok"
	case readEmpty:
		return "empty"
	case readGarbage:
		return "garbage"
	case readBusy:
		return "left half-written"
	}
	return "cut short"
}
