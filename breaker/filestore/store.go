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
// The breakers share their directory, its open files and its MaxOpen
// budget with the directory's other records: Records returns the
// state.File a spend ledger keeps its records in.
package filestore

import (
	"log/slog"
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
	return New(f), nil
}

// New returns the breaker store over the state directory f: f's records
// of the kind ".breaker". Closing the Store closes f.
func New(f *state.File) *Store {
	return &Store{f: f, breakers: f.Kind(ext, state.KindOptions{Blank: encode(breaker.Record{}), Encode: encodeTo, Decode: decode})}
}

// Records returns the state directory the store stands on, for records
// other than breakers (a spend ledger's).
func (s *Store) Records() *state.File { return s.f }

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.f.Dir() }

// Close closes the store's state directory. Call it once nothing uses the
// store, nor its Records, any more.
func (s *Store) Close() error { return s.f.Close() }

// Load returns name's record, read lock-free through the shared mapping.
func (s *Store) Load(name string) (breaker.Record, error) {
	v, err := s.breakers.Load(name)
	rec, _ := v.(breaker.Record)
	return rec, err
}

// Apply applies e to name's record under the file's lock. Slow.Count is
// capped at breaker.MaxStoredSlow. A breaker whose record becomes idle has
// its file removed.
func (s *Store) Apply(name string, set breaker.Settings, e breaker.Event) (breaker.Record, error) {
	if set.Slow.Count > breaker.MaxStoredSlow {
		set.Slow.Count = breaker.MaxStoredSlow
	}
	var next breaker.Record
	err := s.breakers.Update(name, func(old any) (any, error) {
		cur, _ := old.(breaker.Record)
		next = set.Next(cur, e, time.Now())
		if next.Idle() {
			return nil, nil
		}
		return next, nil
	})
	if err != nil {
		return breaker.Record{}, err
	}
	return next, nil
}

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
	return out, nil
}
