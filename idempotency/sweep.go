package idempotency

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// SweepStats is what a File's Sweep found and did.
type SweepStats struct {
	// Answers and Bytes are the answers kept after the sweep and their
	// size on disk.
	Answers int
	Bytes   int64
	// Marks is the live marks seen.
	Marks int
	// Expired counts the expired answers and marks removed, Evicted the
	// live answers removed to bring Bytes under MaxBytes.
	Expired, Evicted int
}

// kept is one answer file as a sweep saw it.
type keptFile struct {
	id      string
	info    fs.FileInfo
	expires time.Time
}

// Sweep removes, as of now, the expired answers and marks, the temporary
// files a killed writer left over an hour ago, and, while the answers
// together are over MaxBytes, the answers expiring first. It never removes
// a live mark. It costs one directory read and one lstat per file, plus a
// read of each mark file (marks are few: one per call in flight). One
// sweep runs at a time in a process; sweeps of several processes do no
// harm (each removal is checked again under the ID's lock).
func (f *File) Sweep(now time.Time) (SweepStats, error) {
	f.sweep.Lock()
	defer f.sweep.Unlock()
	var st SweepStats
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return st, fmt.Errorf("idempotency: sweep: %w", err)
	}
	var live []keptFile
	var errs []error
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, tmpPrefix) {
			if info, err := e.Info(); err == nil && info.ModTime().Before(now.Add(-tmpGrace)) {
				os.Remove(filepath.Join(f.dir, name))
			}
			continue
		}
		id, ext := strings.TrimSuffix(name, filepath.Ext(name)), filepath.Ext(name)
		if checkID(id) != nil {
			continue
		}
		switch ext {
		case markExt:
			if mk, ok := f.readMark(id); ok && now.Before(mk.until) {
				st.Marks++
				continue
			}
			removed, err := f.removeIf(id, markExt, func() bool {
				mk, ok := f.readMark(id)
				return !ok || !now.Before(mk.until)
			})
			errs = append(errs, err)
			if removed {
				st.Expired++
			}
		case answerExt:
			info, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			k := keptFile{id: id, info: info, expires: info.ModTime()}
			if now.Before(k.expires) {
				live = append(live, k)
				st.Bytes += info.Size()
				continue
			}
			removed, err := f.removeIf(id, answerExt, k.unchanged(f))
			errs = append(errs, err)
			if removed {
				st.Expired++
			}
		}
	}
	if st.Bytes > f.opts.MaxBytes {
		slices.SortFunc(live, func(a, b keptFile) int { return a.expires.Compare(b.expires) })
		for len(live) > 0 && st.Bytes > f.opts.MaxBytes {
			k := live[0]
			live = live[1:]
			removed, err := f.removeIf(k.id, answerExt, k.unchanged(f))
			errs = append(errs, err)
			if removed {
				st.Bytes -= k.info.Size()
				st.Evicted++
			}
		}
	}
	st.Answers = len(live)
	f.kept.Store(st.Bytes)
	return st, errors.Join(errs...)
}

// unchanged reports, under the ID's lock, whether the answer file is still
// the one the sweep saw (not replaced by a newer Keep).
func (k keptFile) unchanged(f *File) func() bool {
	return func() bool {
		info, err := os.Lstat(f.path(k.id, answerExt))
		return err == nil && os.SameFile(info, k.info) && info.ModTime().Equal(k.info.ModTime())
	}
}

// removeIf removes id's file of ext if cond, asked under id's lock, holds.
func (f *File) removeIf(id, ext string, cond func() bool) (bool, error) {
	unlock, err := f.lock(id)
	if err != nil {
		return false, err
	}
	defer unlock()
	if !cond() {
		return false, nil
	}
	if err := os.Remove(f.path(id, ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("idempotency: sweep: %w", err)
	}
	return true, nil
}
