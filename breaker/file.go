package breaker

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
// Every process maps each file it uses into memory, shared, once. Load
// reads the record through that mapping with a sequence lock: a writer
// makes the counter odd, writes, and makes it even again; a reader retries
// until it saw an even, unchanged counter, so it never sees half a write
// and it takes no lock, makes no system call and writes nothing. A record
// unchanged since the last Load costs four atomic loads. Apply takes the
// file's flock, reads the record, applies Settings.Next with the current
// time, writes it under the sequence lock and unlocks: the lock is never
// held across a call to the provider. A change is therefore seen by every
// other process at its next Load, at once.
//
// A state file that is cut short, filled with garbage or left half-written
// by a writer killed mid-write is read as a closed breaker, a warning is
// logged once, and the file is rewritten at the breaker's next change. The
// file store needs flock to hold between every process that shares the
// directory: OpenFile refuses a directory on NFS or SMB/CIFS, where it
// would not hold across hosts (share state between hosts with Redis).
//
// Each breaker in use holds one file descriptor and one page of memory in
// every process using it. A state file removed or replaced while processes
// use it is reopened by a process at its next change of that breaker;
// reset breakers with Reset rather than by removing files.
//
// Transform and Snapshot keep small records other than breakers (at most
// 224 bytes, in "<escaped name>.record") with the same locking.
type File struct {
	dir    string
	log    *slog.Logger
	mu     sync.Mutex  // serialises opening files and Close
	slots  [2]sync.Map // per slotKind: name → *slot
	closed atomic.Bool
}

type slotKind uint8

const (
	kindBreaker slotKind = iota
	kindRecord
)

var kindExt = [...]string{".breaker", ".record"}

// slot is one named state file as this process holds it.
type slot struct {
	path    string
	kind    slotKind
	m       atomic.Pointer[mapping]
	cache   atomic.Pointer[cachedRecord]
	mu      sync.Mutex // serialises this process's writers; guards retired
	retired []*mapping // replaced mappings, unmapped at Close
	warned  atomic.Bool
}

// cachedRecord is the record decoded from the write (seq, gen).
type cachedRecord struct {
	seq, gen uint64
	rec      Record
}

var errFileClosed = errors.New("breaker: file store is closed")

// fileSyscalls counts the file store's entries into the kernel (open, lock,
// unlock, stat, truncate), so tests can show the fast path makes none.
var fileSyscalls atomic.Uint64

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
	return &File{dir: dir, log: log}, nil
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
	if c := s.cache.Load(); c != nil && unchanged(s.m.Load().w, c.seq, c.gen) {
		return c.rec, nil
	}
	return f.loadSlow(s)
}

func (f *File) loadSlow(s *slot) (Record, error) {
	var p payload
	st, seq, gen := readWords(s.m.Load().w, &p)
	switch st {
	case readOK:
		if rec, ok := decodeRecord(&p); ok {
			s.cache.Store(&cachedRecord{seq: seq, gen: gen, rec: rec})
			return rec, nil
		}
		f.warnDamaged(s, "not a breaker record")
	case readGarbage:
		f.warnDamaged(s, "garbage")
	case readFault:
		f.warnDamaged(s, "cut short")
		return Record{}, f.update(s, func(*payload, readStatus) (bool, error) { return false, nil })
	case readBusy:
		return f.loadLocked(s)
	}
	return Record{}, nil
}

// loadLocked reads name's record under the file lock, when lock-free reads
// kept finding a write in progress. A write left unfinished by a dead
// writer is repaired.
func (f *File) loadLocked(s *slot) (Record, error) {
	var rec Record
	err := f.update(s, func(p *payload, st readStatus) (bool, error) {
		var ok bool
		if st == readOK {
			rec, ok = decodeRecord(p)
		}
		if ok || st == readEmpty {
			return false, nil
		}
		f.warnDamaged(s, st.String())
		encodeRecord(p, Record{})
		return true, nil
	})
	return rec, err
}

// Apply applies e to name's record under the file's lock. Slow.Count is
// capped at MaxStoredSlow.
func (f *File) Apply(name string, set Settings, e Event) (Record, error) {
	s, err := f.slot(name, kindBreaker)
	if err != nil {
		return Record{}, err
	}
	set.Slow.Count = min(set.Slow.count(), MaxStoredSlow)
	var next Record
	err = f.update(s, func(p *payload, st readStatus) (bool, error) {
		var cur Record
		ok := false
		if st == readOK {
			cur, ok = decodeRecord(p)
		}
		if !ok && st != readEmpty {
			f.warnDamaged(s, st.String())
		}
		next = set.Next(cur, e, time.Now())
		var np payload
		encodeRecord(&np, next)
		if ok && np == *p {
			return false, nil
		}
		*p = np
		return true, nil
	})
	if err != nil {
		return Record{}, err
	}
	return next, nil
}

// List returns the record of every breaker file in the directory, by name.
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
// the record is new or was damaged. If fn returns an error, the record is
// left as it was and Transform returns that error. A record holds at most
// 224 bytes. Never call the provider, or anything slow, from fn.
func (f *File) Transform(name string, fn func(old []byte) ([]byte, error)) error {
	s, err := f.slot(name, kindRecord)
	if err != nil {
		return err
	}
	return f.update(s, func(p *payload, st readStatus) (bool, error) {
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
			return false, err
		}
		if len(b) > payloadMax {
			return false, fmt.Errorf("breaker: record %q would be %d bytes, more than the %d a state file holds", name, len(b), payloadMax)
		}
		p.setBytes(b)
		return true, nil
	})
}

// Snapshot returns the small record called name as Transform last wrote
// it, read lock-free; nil if there is none.
func (f *File) Snapshot(name string) ([]byte, error) {
	s, err := f.slot(name, kindRecord)
	if err != nil {
		return nil, err
	}
	var p payload
	st, _, _ := readWords(s.m.Load().w, &p)
	switch st {
	case readOK:
		return p.bytes(), nil
	case readEmpty:
		return nil, nil
	case readBusy:
		var b []byte
		err := f.update(s, func(p *payload, st readStatus) (bool, error) {
			if st == readOK {
				b = p.bytes()
			}
			return false, nil
		})
		return b, err
	}
	f.warnDamaged(s, st.String())
	return nil, nil
}

// Close unmaps and closes the store's files. Call it once nothing uses
// the store any more.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Swap(true) {
		return nil
	}
	var errs []error
	for k := range f.slots {
		f.slots[k].Range(func(_, v any) bool {
			s := v.(*slot)
			s.mu.Lock()
			defer s.mu.Unlock()
			for _, m := range append(s.retired, s.m.Load()) {
				errs = append(errs, m.close())
			}
			return true
		})
	}
	return errors.Join(errs...)
}

// slot returns the open state file of name, opening it on first use.
func (f *File) slot(name string, k slotKind) (*slot, error) {
	if f.closed.Load() {
		return nil, errFileClosed
	}
	if v, ok := f.slots[k].Load(name); ok {
		return v.(*slot), nil
	}
	return f.open(name, k)
}

func (f *File) open(name string, k slotKind) (*slot, error) {
	stem, err := escapeName(name)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed.Load() {
		return nil, errFileClosed
	}
	if v, ok := f.slots[k].Load(name); ok {
		return v.(*slot), nil
	}
	s := &slot{path: filepath.Join(f.dir, stem+kindExt[k]), kind: k}
	m, grew, err := openMapping(s.path, initialPayload(k))
	if err != nil {
		return nil, err
	}
	if grew {
		f.warnDamaged(s, "cut short")
	}
	s.m.Store(m)
	f.slots[k].Store(name, s)
	return s, nil
}

func initialPayload(k slotKind) payload {
	var p payload
	if k == kindBreaker {
		encodeRecord(&p, Record{})
	}
	return p
}

// update is the one locked read-modify-write of a state file: it takes
// this process's lock and the file lock, reads the payload, lets fn change
// it and writes it if fn says so. A file that was removed or replaced is
// reopened, one cut short is extended first.
func (f *File) update(s *slot, fn func(p *payload, st readStatus) (write bool, err error)) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.closed.Load() {
		return errFileClosed
	}
	m, err := f.lockMapping(s)
	if err != nil {
		return fmt.Errorf("breaker: lock state file %s: %w", s.path, err)
	}
	defer m.unlock()
	var p payload
	st, gen := readHeld(m.w, &p)
	write, err := fn(&p, st)
	if err != nil || !write {
		return err
	}
	if st != readOK {
		gen = rand.Uint64() | 1
		s.warned.Store(false)
	}
	if writeWords(m.w, &p, gen) == readFault {
		return fmt.Errorf("breaker: write state file %s: the file was cut short while written", s.path)
	}
	return nil
}

// lockMapping takes the file lock of s's file, reopening the file first if
// it was removed or replaced since it was mapped.
func (f *File) lockMapping(s *slot) (*mapping, error) {
	m := s.m.Load()
	if err := m.lock(); err != nil {
		return nil, err
	}
	size, replaced := m.check(s.path)
	if replaced {
		m.unlock()
		nm, _, err := openMapping(s.path, initialPayload(s.kind))
		if err != nil {
			return nil, err
		}
		s.retired = append(s.retired, m)
		s.m.Store(nm)
		s.cache.Store(nil)
		m = nm
		if err := m.lock(); err != nil {
			return nil, err
		}
		size, _ = m.check(s.path)
	}
	if size < fileSize {
		f.warnDamaged(s, "cut short")
		if err := m.grow(); err != nil {
			m.unlock()
			return nil, err
		}
	}
	return m, nil
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
