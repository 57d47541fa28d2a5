package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Names returns the name of every record of the kind that has a file in
// the directory, in no particular order.
func (k *Kind) Names() ([]string, error) {
	if k.f.closed.Load() {
		return nil, ErrClosed
	}
	ents, err := os.ReadDir(k.f.dir)
	if err != nil {
		return nil, fmt.Errorf("state: list state directory: %w", err)
	}
	var names []string
	for _, e := range ents {
		if name, ok := k.nameOf(e); ok {
			names = append(names, name)
		}
	}
	return names, nil
}

// nameOf returns the record name of directory entry e, ok false if e is
// not a state file of the kind.
func (k *Kind) nameOf(e os.DirEntry) (string, bool) {
	stem, ok := strings.CutSuffix(e.Name(), k.ext)
	if !ok || e.IsDir() {
		return "", false
	}
	return unescapeName(stem)
}

// RemoveRecords removes every record of the kind for which drop, shown the
// record's name and bytes under its file lock, returns true; a file
// holding no record is removed without asking. It reads each of the
// kind's files in the directory (an open, a lock and a read each): call it
// at a bounded rate. It returns how many it removed.
func (k *Kind) RemoveRecords(drop func(name string, rec []byte) bool) (int, error) {
	f := k.f
	if f.closed.Load() {
		return 0, ErrClosed
	}
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return 0, fmt.Errorf("state: list state directory: %w", err)
	}
	removed := 0
	var errs []error
	for _, e := range ents {
		name, ok := k.nameOf(e)
		if !ok {
			continue
		}
		gi := genIndex(k.half, e.Name())
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
			errs = append(errs, fmt.Errorf("state: sweep record %q: %w", name, err))
		}
	}
	return removed, errors.Join(errs...)
}
