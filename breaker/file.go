package breaker

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FileOptions configures a File store. The zero value is usable.
type FileOptions struct {
	// Logger receives the store's warnings: a damaged state file, a writer
	// that died mid-write. If nil, slog.Default() is used.
	Logger *slog.Logger

	// MaxOpen is the most state files the store holds open and mapped at
	// once: one descriptor and one page of memory each. When a file must be
	// opened and MaxOpen are, the one least recently used is closed first
	// (and reopened at its next use). If zero, 64.
	MaxOpen int
}

// File is a Store shared by every process on one host that opens the same
// directory. It is safe for concurrent use.
//
// Each breaker is one file, "<escaped name>.breaker", of 256 bytes: a magic
// number, a sequence counter, a generation, a length and the Record, at most
// MaxStoredSlow slow-attempt times and a Reason of at most 16 bytes
// included. In a name, lowercase ASCII letters, digits, '-', '_' and '.'
// (not first) stand for themselves and every other byte is written %XX, so
// "openai/gpt-4o" is "openai%2Fgpt-4o.breaker". The directory is made
// private (0700) and the files are 0600. The words are in the machine's
// byte order: a file moved to another kind of machine reads as damaged.
//
// A breaker that is closed, with no failure or slow attempt counted and no
// transition in its life, has no file: it reads as closed, and its file is
// created at its first failure and removed when it is back to that state.
// A process maps each file it uses into memory, shared. Load reads the
// record through that mapping with a sequence lock: a writer makes the
// counter odd, writes, and makes it even again; a reader retries until it
// saw an even, unchanged counter, so it never sees half a write and it
// takes no lock, makes no system call and writes nothing. A record
// unchanged since the last Load costs six atomic loads, a breaker with no
// file two. Apply takes the file's flock, reads the record, applies
// Settings.Next with the current time, writes it under the sequence lock
// and unlocks: the lock is never held across a call to the provider. A
// change is therefore seen by every other process at its next Load, at
// once; so are a file's creation and removal, which each process learns
// from a shared page of counters, ".generations", bumped by whoever creates
// or removes a state file.
//
// A state file that is cut short, filled with garbage or left half-written
// by a writer killed mid-write is read as a closed breaker, a warning is
// logged once, and the file is rewritten at the breaker's next change. The
// file store needs flock to hold between every process that shares the
// directory: OpenFile refuses a directory on NFS or SMB/CIFS, where it
// would not hold across hosts (share state between hosts with Redis).
//
// Bounds: a process holds at most FileOptions.MaxOpen state files open and
// mapped (64 by default, the least recently used closed first), plus one
// mapping of the generation page and one reserved range of MaxOpen pages.
// Its table of names keeps those in recent use. A state file removed or
// replaced is let go of (descriptor closed, page released) at the next use
// of its name; do not remove ".generations" while processes use the
// directory, and reset breakers with Reset rather than by removing files.
//
// Transform and Snapshot keep small records other than breakers (at most
// 224 bytes, in "<escaped name>.record") with the same locking; a record
// transformed to nothing is removed, and RemoveRecords removes the
// records their owner no longer needs.
type File struct {
	dir     string
	log     *slog.Logger
	gens    *genPage
	slots   [2]sync.Map // per slotKind: name → *slot
	nslots  atomic.Int64
	pruneAt atomic.Int64
	closed  atomic.Bool

	mu     sync.Mutex // guards what follows, and Close
	region region
	pages  []*slot // the slot holding each page of the region, nil if free
	hand   int     // where the search for a page to take resumes
}

type slotKind uint8

const (
	kindBreaker slotKind = iota
	kindRecord
)

var kindExt = [...]string{".breaker", ".record"}

var errFileClosed = errors.New("breaker: file store is closed")

// fileSyscalls counts the file store's entries into the kernel (open, map,
// lock, unlock, stat, truncate, remove), so tests can show the fast path
// makes none.
var fileSyscalls atomic.Uint64

// defaultMaxOpen is FileOptions.MaxOpen's default.
const defaultMaxOpen = 64

// OpenFile opens the file store in dir, creating the directory (0700) if
// needed. It refuses a directory on a network file system where file locks
// do not hold across hosts.
func OpenFile(dir string, opts FileOptions) (*File, error) {
	if dir == "" {
		return nil, errors.New("breaker: empty state directory: name a directory for the file store")
	}
	if !fileStoreSupported {
		return nil, errors.New("breaker: the file store needs Linux, macOS or a BSD: use the memory or redis store")
	}
	if opts.MaxOpen < 0 {
		return nil, fmt.Errorf("breaker: MaxOpen %d is negative: give at least 1, or 0 for the default", opts.MaxOpen)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("breaker: create state directory: %w", err)
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
	f.pruneAt.Store(f.prunePoint(0))
	return f, nil
}

func privateDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("breaker: state directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("breaker: state directory %s is not a directory: name a directory", dir)
	}
	if st.Mode().Perm()&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("breaker: state directory %s is open to other users (%v) and cannot be made private (%v): choose a directory of your own", dir, st.Mode().Perm(), err)
	}
	return nil
}

// Dir returns the store's directory.
func (f *File) Dir() string { return f.dir }

// Load returns name's record, read lock-free through the shared mapping.
func (f *File) Load(name string) (Record, error) {
	s, err := f.slot(name, kindBreaker)
	if err != nil {
		return Record{}, err
	}
	s.touch()
	if v := s.view.Load(); v != nil && f.fresh(s, v) {
		return v.rec, nil
	}
	return f.loadSlow(s)
}

func (f *File) loadSlow(s *slot) (Record, error) {
	s, err := f.lockSlot(s)
	if err != nil {
		return Record{}, err
	}
	defer s.mu.Unlock()
	m, g, err := f.current(s)
	if err != nil {
		return Record{}, err
	}
	if m == nil {
		s.view.Store(&view{dirGen: g})
		return Record{}, nil
	}
	var p payload
	st, seq, gen := readWords(m.w, &p)
	switch st {
	case readOK:
		if rec, ok := decodeRecord(&p); ok {
			s.view.Store(&view{m: m, dirGen: g, seq: seq, gen: gen, rec: rec})
			return rec, nil
		}
		f.warnDamaged(s, "not a breaker record")
	case readGarbage:
		f.warnDamaged(s, "garbage")
	case readFault:
		f.warnDamaged(s, "cut short")
		return Record{}, f.updateHeld(s, func(*payload, readStatus) (action, error) { return leave, nil })
	case readBusy:
		return f.loadLocked(s)
	}
	return Record{}, nil
}

// loadLocked reads name's record under the file lock, when lock-free reads
// kept finding a write in progress. A write left unfinished by a dead
// writer is repaired. The caller holds s.mu.
func (f *File) loadLocked(s *slot) (Record, error) {
	var rec Record
	err := f.updateHeld(s, func(p *payload, st readStatus) (action, error) {
		var ok bool
		if st == readOK {
			rec, ok = decodeRecord(p)
		}
		if ok || st == readEmpty {
			return leave, nil
		}
		f.warnDamaged(s, st.String())
		encodeRecord(p, Record{})
		return write, nil
	})
	return rec, err
}

// Apply applies e to name's record under the file's lock. Slow.Count is
// capped at MaxStoredSlow. A breaker whose record becomes idle (closed,
// nothing counted, no transition) has its file removed.
func (f *File) Apply(name string, set Settings, e Event) (Record, error) {
	s, err := f.slot(name, kindBreaker)
	if err != nil {
		return Record{}, err
	}
	s.touch()
	set.Slow.Count = min(set.Slow.count(), MaxStoredSlow)
	var next Record
	err = f.update(s, func(p *payload, st readStatus) (action, error) {
		var cur Record
		ok := false
		if st == readOK {
			cur, ok = decodeRecord(p)
		}
		if !ok && st != readEmpty {
			f.warnDamaged(s, st.String())
		}
		next = set.Next(cur, e, time.Now())
		if idle(next) {
			return remove, nil
		}
		var np payload
		encodeRecord(&np, next)
		if ok && np == *p {
			return leave, nil
		}
		*p = np
		return write, nil
	})
	if err != nil {
		return Record{}, err
	}
	return next, nil
}

// idle reports whether r is the record of a breaker with nothing to
// share: closed, nothing counted, never changed state. It needs no file.
func idle(r Record) bool {
	return r.State == Closed && r.Failures == 0 && len(r.Slow) == 0 && r.Transitions == 0
}

// List returns the record of every breaker file in the directory, by name.
// A breaker with no file (closed, idle) is not listed.
func (f *File) List() (map[string]Record, error) {
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return nil, fmt.Errorf("breaker: list state directory: %w", err)
	}
	out := make(map[string]Record)
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), kindExt[kindBreaker])
		if !ok || e.IsDir() {
			continue
		}
		name, ok := unescapeName(stem)
		if !ok {
			continue
		}
		rec, err := f.Load(name)
		if err != nil {
			return nil, err
		}
		out[name] = rec
	}
	return out, nil
}

// Transform atomically replaces the small record called name (not a
// breaker's) by fn(old), under the same file lock as Apply: old is nil when
// the record is new or was damaged. A record transformed to nothing (nil or
// empty) is removed, its file with it. If fn returns an error, the record
// is left as it was and Transform returns that error. A record holds at
// most 224 bytes. fn may be called twice when the record has no file yet
// (once to see whether it needs one, once under the new file's lock): only
// the last call's result is kept. Never call the provider, or anything
// slow, from fn.
func (f *File) Transform(name string, fn func(old []byte) ([]byte, error)) error {
	s, err := f.slot(name, kindRecord)
	if err != nil {
		return err
	}
	s.touch()
	return f.update(s, func(p *payload, st readStatus) (action, error) {
		var old []byte
		switch st {
		case readOK:
			old = p.bytes()
		case readEmpty:
		default:
			f.warnDamaged(s, st.String())
		}
		b, err := fn(old)
		if err != nil {
			return leave, err
		}
		if len(b) > payloadMax {
			return leave, fmt.Errorf("breaker: record %q would be %d bytes, more than the %d a state file holds", name, len(b), payloadMax)
		}
		if len(b) == 0 {
			return remove, nil
		}
		p.setBytes(b)
		return write, nil
	})
}

// Snapshot returns the small record called name as Transform last wrote
// it; nil if there is none. It reads without the file lock.
func (f *File) Snapshot(name string) ([]byte, error) {
	s, err := f.slot(name, kindRecord)
	if err != nil {
		return nil, err
	}
	s, err = f.lockSlot(s)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	m, _, err := f.current(s)
	if err != nil || m == nil {
		return nil, err
	}
	var p payload
	st, _, _ := readWords(m.w, &p)
	switch st {
	case readOK:
		return p.bytes(), nil
	case readEmpty:
		return nil, nil
	case readBusy:
		var b []byte
		err := f.updateHeld(s, func(p *payload, st readStatus) (action, error) {
			if st == readOK {
				b = p.bytes()
			}
			return leave, nil
		})
		return b, err
	}
	f.warnDamaged(s, st.String())
	return nil, nil
}

// RemoveRecords removes every small record for which drop, shown the
// record's name and bytes under its file lock, returns true. It reads each
// record file of the directory (an open, a lock and a read each): call it
// at a bounded rate. It returns how many it removed.
func (f *File) RemoveRecords(drop func(name string, rec []byte) bool) (int, error) {
	if f.closed.Load() {
		return 0, errFileClosed
	}
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return 0, fmt.Errorf("breaker: list state directory: %w", err)
	}
	removed := 0
	var errs []error
	for _, e := range ents {
		stem, ok := strings.CutSuffix(e.Name(), kindExt[kindRecord])
		if !ok || e.IsDir() {
			continue
		}
		name, ok := unescapeName(stem)
		if !ok {
			continue
		}
		gi := genIndex(kindRecord, e.Name())
		err := sweepFile(filepath.Join(f.dir, e.Name()), func(p *payload, st readStatus) bool {
			switch st {
			case readOK:
				return p.n == 0 || drop(name, p.bytes())
			case readEmpty:
				return true
			}
			return false
		}, func() {
			f.gens.bump(gi)
			removed++
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("breaker: sweep record %q: %w", name, err))
		}
	}
	return removed, errors.Join(errs...)
}

// Close unmaps and closes the store's files. Call it once nothing uses
// the store any more.
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
		f.log.Warn("breaker: damaged state file read as a closed breaker; it is rewritten at the next change",
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
