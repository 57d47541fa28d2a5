package idempotency

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SweepStats is what a File's Sweep found and did.
type SweepStats struct {
	// Answers and Bytes are the answers kept after the sweep and the
	// space they take on disk (whole blocks).
	Answers int
	Bytes   int64
	// Marks is the live marks seen.
	Marks int
	// Expired counts the expired answers and marks removed, Evicted the
	// live answers removed to bring Bytes under MaxBytes.
	Expired, Evicted int
}

// keptFile is one answer file as a sweep saw it.
type keptFile struct {
	id      string
	info    fs.FileInfo
	expires time.Time
}

// Sweep removes, as of now, the expired answers and marks, the temporary
// files a killed writer left over an hour ago, and, when the answers
// together take more than MaxBytes on disk, the answers expiring first
// until they take at most nine tenths of it (so that a full store sweeps
// once per tenth of MaxBytes kept, not at every Keep). It never removes
// a live mark. It costs one directory read and one lstat per file, plus a
// read of each table of marks (256 small files, rewritten where a mark
// expired). One
// sweep runs at a time in a process; sweeps of several processes do no
// harm (each removal is checked again under the ID's lock).
func (f *File) Sweep(now time.Time) (SweepStats, error) {
	f.sweep.Lock()
	defer f.sweep.Unlock()
	added := f.added.Load()
	var st SweepStats
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return st, fmt.Errorf("idempotency: sweep: %w", err)
	}
	var live, expired []keptFile
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
		case answerExt:
			info, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			k := keptFile{id: id, info: info, expires: info.ModTime()}
			if now.Before(k.expires) {
				live = append(live, k)
				st.Bytes += diskSize(info)
			} else {
				expired = append(expired, k)
			}
		}
	}
	removed, err := f.removeAnswers(expired)
	st.Expired += len(removed)
	errs = append(errs, err, f.sweepMarks(now, &st))
	if st.Bytes > f.opts.MaxBytes {
		slices.SortFunc(live, func(a, b keptFile) int { return a.expires.Compare(b.expires) })
		low, drop, n := f.opts.MaxBytes/10*9, st.Bytes, 0
		for n < len(live) && drop > low {
			drop -= diskSize(live[n].info)
			n++
		}
		removed, err := f.removeAnswers(live[:n])
		errs = append(errs, err)
		for _, k := range removed {
			st.Bytes -= diskSize(k.info)
		}
		st.Evicted = len(removed)
	}
	st.Answers = len(live) - st.Evicted
	f.kept.Store(st.Bytes + f.added.Load() - added) // what was kept meanwhile may be counted twice: never too low
	return st, errors.Join(errs...)
}

// removeAnswers removes the answer files of ks that are still the ones
// the sweep saw (not replaced by a newer Keep since), checking each under
// its ID's lock, taken once per shard, and returns those it removed.
func (f *File) removeAnswers(ks []keptFile) (removed []keptFile, err error) {
	byShard := make(map[int][]keptFile)
	for _, k := range ks {
		i := hexByte(k.id)
		byShard[i] = append(byShard[i], k)
	}
	var errs []error
	for i, group := range byShard {
		errs = append(errs, f.transformShard(i, func(*marks) (bool, error) {
			for _, k := range group {
				path := f.path(k.id, answerExt)
				info, err := os.Lstat(path)
				if err != nil || !os.SameFile(info, k.info) || !info.ModTime().Equal(k.info.ModTime()) {
					continue
				}
				if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
					errs = append(errs, fmt.Errorf("idempotency: sweep: %w", err))
					continue
				}
				removed = append(removed, k)
			}
			return false, nil
		}))
	}
	return removed, errors.Join(errs...)
}

// sweepMarks drops the expired marks from every shard's table that exists,
// and counts the live ones.
func (f *File) sweepMarks(now time.Time, st *SweepStats) error {
	ents, err := os.ReadDir(filepath.Join(f.dir, ".locks"))
	if err != nil {
		return fmt.Errorf("idempotency: sweep: %w", err)
	}
	var errs []error
	for _, e := range ents {
		i, err := strconv.ParseUint(e.Name(), 16, 8)
		if err != nil || len(e.Name()) != 2 {
			continue
		}
		errs = append(errs, f.transformShard(int(i), func(t *marks) (bool, error) {
			n := len(*t)
			pruned := t.prune(now)
			st.Expired += n - len(*t)
			st.Marks += len(*t)
			return pruned, nil
		}))
	}
	return errors.Join(errs...)
}
