// Package filestore is the breaker.Store shared by every process of one
// host: the breakers of a state directory (package state).
//
// Each breaker is one file, "<escaped name>.breaker", of state.FileSize
// bytes, its Record encoded in at most state.MaxRecord: at most
// breaker.MaxStoredSlow slow-attempt times and a Reason of at most 16 bytes
// are kept. A breaker that is closed, with no failure or slow attempt
// counted and no transition in its life (an idle Record), has no file: it
// reads as closed, its file is created at its first failure and removed
// when it is idle again.
//
// Load reads a breaker's record lock-free through the file's shared
// mapping (see state.File): a record unchanged since the last Load costs
// six atomic loads and no system call, a breaker with no file two. Apply
// takes the file's flock, reads the record, applies Settings.Next with the
// current time, writes it and unlocks: the lock is never held across a
// call to the provider. A state file found damaged is read as a closed
// breaker, a warning is logged once, and it is rewritten at the breaker's
// next change.
//
// A breaker whose file cannot be written (a full disk, a file-size limit)
// goes on counting in this process's memory, for this process alone,
// rather than counting nothing: a warning is logged once, Degraded
// reports it, and a reset made meanwhile returns the error, since the
// other processes did not see it. The first change written again carries
// every record the process kept into the directory.
//
// The breakers share their directory, its open files and its MaxOpen
// budget with the directory's other records: Records returns the
// state.File a spend ledger keeps its records in.
package filestore

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/state"
)

// Options configures Open. The zero value is usable.
type Options struct {
	// Logger receives the store's warnings: a damaged state file, a writer
	// that died mid-write. If nil, slog.Default() is used.
	Logger *slog.Logger

	// MaxOpen is the most state files the directory holds open and mapped
	// at once, breakers and other records together: one descriptor and one
	// page of memory each; the least recently used is closed first. If
	// zero, 64.
	MaxOpen int
}

// ext is the extension of a breaker's state file.
const ext = ".breaker"

// Store is the breaker.Store of a state directory. It is safe for
// concurrent use.
type Store struct {
	f        *state.File
	breakers *state.Kind
	log      *slog.Logger

	// While a breaker's file cannot be written (a full disk, a file-size
	// limit, a directory made read-only), its record is kept here, in this
	// process alone, and carried into the file at its first write that
	// succeeds.
	localMu   sync.Mutex   // serialises the changes of local records
	local     sync.Map     // name → *breaker.Record
	nlocal    atomic.Int64 // the names in local
	fallbacks atomic.Uint64
}

// Open opens the state directory dir (creating it, 0700, if needed) and
// returns the breaker store over it. It refuses a directory on a network
// file system, where file locks do not hold across hosts. Close closes
// the directory.
func Open(dir string, opts Options) (*Store, error) {
	f, err := state.OpenFile(dir, state.FileOptions{Logger: opts.Logger, MaxOpen: opts.MaxOpen})
	if err != nil {
		return nil, err
	}
	s := New(f)
	if opts.Logger != nil {
		s.log = opts.Logger
	}
	return s, nil
}

// New returns the breaker store over the state directory f: f's records
// of the kind ".breaker". Closing the Store closes f.
func New(f *state.File) *Store {
	return &Store{f: f, breakers: f.Kind(ext, state.KindOptions{Blank: encode(breaker.Record{}), Encode: encodeTo, Decode: decode}),
		log: slog.Default()}
}

// Records returns the state directory the store stands on, for records
// other than breakers (a spend ledger's).
func (s *Store) Records() *state.File { return s.f }

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.f.Dir() }

// Close closes the store's state directory. Call it once nothing uses the
// store, nor its Records, any more.
func (s *Store) Close() error { return s.f.Close() }

// Load returns name's record, read lock-free through the shared mapping;
// while its file cannot be written, the record this process keeps.
func (s *Store) Load(name string) (breaker.Record, error) {
	if rec, ok := s.localRecord(name); ok {
		return rec, nil
	}
	v, err := s.breakers.Load(name)
	rec, _ := v.(breaker.Record)
	return rec, err
}

// Apply applies e to name's record under the file's lock. Slow.Count is
// capped at breaker.MaxStoredSlow. A breaker whose record becomes idle has
// its file removed.
func (s *Store) Apply(name string, set breaker.Settings, e breaker.Event) (breaker.State, breaker.Record, error) {
	if set.Slow.Count > breaker.MaxStoredSlow {
		set.Slow.Count = breaker.MaxStoredSlow
	}
	var from breaker.State
	var next breaker.Record
	err := s.breakers.Update(name, func(old any) (any, error) {
		cur, _ := old.(breaker.Record)
		if rec, ok := s.localRecord(name); ok {
			cur = rec // what this process counted while the file could not be written
		}
		from, next = cur.State, set.Next(cur, e, time.Now())
		if next.Idle() {
			return nil, nil
		}
		return next, nil
	})
	switch {
	case errors.Is(err, state.ErrClosed):
		return breaker.Closed, breaker.Record{}, err
	case err != nil:
		return s.applyLocal(name, set, e, err)
	}
	s.written(name)
	return from, next, nil
}

// localRecord returns the record this process keeps for name while its
// file cannot be written; false when it keeps none.
func (s *Store) localRecord(name string) (breaker.Record, bool) {
	if s.nlocal.Load() == 0 {
		return breaker.Record{}, false
	}
	v, ok := s.local.Load(name)
	if !ok {
		return breaker.Record{}, false
	}
	return *v.(*breaker.Record), true
}

// applyLocal applies e to name's record in this process's memory, when
// writing its file failed with cause: the breaker goes on counting, for
// this process alone, rather than counting nothing. The first breaker to
// go local logs a warning. A reset still returns cause: an operator must
// know that other processes did not see it.
func (s *Store) applyLocal(name string, set breaker.Settings, e breaker.Event, cause error) (breaker.State, breaker.Record, error) {
	s.localMu.Lock()
	cur, ok := s.localRecord(name)
	if !ok {
		cur, _ = s.Load(name) // the file's last record, as far as it can be read
	}
	next := set.Next(cur, e, time.Now())
	if _, had := s.local.Swap(name, &next); !had && s.nlocal.Add(1) == 1 {
		s.fallbacks.Add(1)
		s.log.Warn("filestore: cannot write the state directory; breakers count in this process alone until it can be written again",
			"dir", s.Dir(), "breaker", name, "err", cause)
	}
	s.localMu.Unlock()
	if e.Kind == breaker.EventReset {
		return cur.State, next, cause
	}
	return cur.State, next, nil
}

// written notes that name's file was written: a record kept in this
// process is in the file now, and the directory can be written again, so
// the other records kept here are carried into their files too.
func (s *Store) written(name string) {
	if s.nlocal.Load() == 0 {
		return
	}
	s.localMu.Lock()
	defer s.localMu.Unlock()
	if _, had := s.local.LoadAndDelete(name); had {
		s.nlocal.Add(-1)
	}
	s.local.Range(func(k, v any) bool {
		other, rec := k.(string), v.(*breaker.Record)
		err := s.breakers.Update(other, func(any) (any, error) {
			if rec.Idle() {
				return nil, nil
			}
			return *rec, nil
		})
		if err == nil && s.local.CompareAndDelete(other, rec) {
			s.nlocal.Add(-1)
		}
		return err == nil
	})
	if s.nlocal.Load() == 0 {
		s.log.Info("filestore: the state directory can be written again; breakers are shared again", "dir", s.Dir())
	}
}

// Degraded reports whether some breaker counts in this process alone,
// its file not writable.
func (s *Store) Degraded() bool { return s.nlocal.Load() > 0 }

// FallbacksTotal returns how many times breakers went local because the
// state directory could not be written.
func (s *Store) FallbacksTotal() uint64 { return s.fallbacks.Load() }

// List returns the record of every breaker file in the directory, by name.
// A breaker with no file (closed, idle) is not listed.
func (s *Store) List() (map[string]breaker.Record, error) {
	names, err := s.breakers.Names()
	if err != nil {
		return nil, err
	}
	out := make(map[string]breaker.Record, len(names))
	for _, name := range names {
		rec, err := s.Load(name)
		if err != nil {
			return nil, err
		}
		out[name] = rec
	}
	if s.nlocal.Load() > 0 {
		s.local.Range(func(k, v any) bool {
			out[k.(string)] = *v.(*breaker.Record)
			return true
		})
	}
	return out, nil
}
