package idempotency

import (
	"bufio"
	"errors"
	"fmt"
	"io"
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
	// bytes their logs take (with what a log holds of expired or replaced
	// answers until it is rewritten).
	Answers int
	Bytes   int64
	// Marks is the live marks seen.
	Marks int
	// Expired counts the expired answers and marks removed, Evicted the
	// live answers removed to bring Bytes under MaxBytes.
	Expired, Evicted int
}

// keptRecord is one live answer as a sweep saw it.
type keptRecord struct {
	shard int
	entry
}

// Sweep removes, as of now, the expired marks, and rewrites each log
// without its expired and replaced answers once they take a quarter of
// it; when the logs together take more than MaxBytes it also drops the
// answers expiring first until they take at most nine tenths of it (so
// that a full store sweeps once per tenth of MaxBytes kept, not at every
// Keep). It never removes a live mark. It costs three flocks of each
// shard's lock file (256 small files, their tables read in memory) and
// the heads of the records appended since this process last read them,
// plus the copy of the logs it rewrites. It also removes files of the answer store's earlier layout
// and temporary files a killed writer left over an hour ago. One sweep
// runs at a time in a process; sweeps of several processes do no harm
// (each works under the shard's lock).
func (f *File) Sweep(now time.Time) (SweepStats, error) {
	f.sweep.Lock()
	defer f.sweep.Unlock()
	added := f.added.Load()
	var st SweepStats
	errs := []error{f.removeLeftovers(now)}
	shards, err := f.shards()
	if err != nil {
		return st, err
	}
	var live []keptRecord
	dead, ends := map[int]int64{}, map[int]int64{}
	var total int64
	for _, i := range shards {
		errs = append(errs, f.transformShard(i, func(s *shard, t *table) error {
			pruned, err := t.prune(now)
			st.Expired += pruned
			used := int64(0)
			for _, e := range s.index {
				if e.liveAt(now) {
					live = append(live, keptRecord{i, e})
					used += e.size
				}
			}
			total += t.log.end
			ends[i], dead[i] = t.log.end, t.log.end-used
			return err
		}))
	}
	drop := map[int][]int64{} // per shard, the offsets of answers to evict
	if total > f.opts.MaxBytes {
		slices.SortFunc(live, func(a, b keptRecord) int { return int(min(max(a.expires-b.expires, -1), 1)) })
		used := int64(0)
		for _, k := range live {
			used += k.size
		}
		for _, k := range live {
			if used <= f.opts.MaxBytes/10*9 {
				break
			}
			drop[k.shard] = append(drop[k.shard], k.off)
			used -= k.size
		}
	}
	for _, i := range shards {
		if d := dead[i]; len(drop[i]) == 0 && (d == 0 || d*4 < ends[i] && total <= f.opts.MaxBytes) {
			continue
		}
		var stale []string
		err := f.transformShard(i, func(s *shard, t *table) error {
			var err error
			stale, err = f.rewrite(i, s, t, now, drop[i], &st)
			return err
		})
		if err == nil { // the new log is committed: the old ones can go
			for _, name := range stale {
				os.Remove(name)
			}
		}
		errs = append(errs, err)
	}
	for _, i := range shards {
		errs = append(errs, f.transformShard(i, func(s *shard, t *table) error {
			st.Marks += t.n
			st.Bytes += t.log.end
			for _, e := range s.index {
				if e.liveAt(now) {
					st.Answers++
				}
			}
			return nil
		}))
	}
	f.kept.Store(st.Bytes + f.added.Load() - added) // what was kept meanwhile may be counted twice: never too low
	return st, errors.Join(errs...)
}

// shards lists the shards that have a lock file.
func (f *File) shards() ([]int, error) {
	ents, err := os.ReadDir(filepath.Join(f.dir, ".locks"))
	if err != nil {
		return nil, fmt.Errorf("idempotency: sweep: %w", err)
	}
	var out []int
	for _, e := range ents {
		if i, err := strconv.ParseUint(e.Name(), 16, 8); err == nil && len(e.Name()) == 2 {
			out = append(out, int(i))
		}
	}
	return out, nil
}

// rewrite copies shard i's live answers, but those at the offsets in
// drop, into the log's next generation and points t at it, returning the
// shard's other logs, to remove now that t points past them: the old one,
// and any a killed rewrite left. With no answer left it writes no file.
func (f *File) rewrite(i int, s *shard, t *table, now time.Time, drop []int64, st *SweepStats) ([]string, error) {
	var keep []entry
	ids := map[int64][32]byte{}
	for id, e := range s.index {
		switch {
		case !e.liveAt(now):
			st.Expired++
		case slices.Contains(drop, e.off):
			st.Evicted++
		default:
			keep = append(keep, e)
			ids[e.off] = id
		}
	}
	slices.SortFunc(keep, func(a, b entry) int { return int(min(max(a.off-b.off, -1), 1)) })
	next := logHead{gen: t.log.gen + 1}
	index := make(map[[32]byte]entry, len(keep))
	var lf *os.File
	if len(keep) > 0 {
		var err error
		if lf, err = os.OpenFile(f.logPath(i, next.gen), os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600); err != nil {
			return nil, fmt.Errorf("idempotency: sweep: %w", err)
		}
		w := bufio.NewWriterSize(lf, 64<<10)
		for _, e := range keep {
			if _, err = io.Copy(w, io.NewSectionReader(s.log, e.off, e.size)); err != nil {
				break
			}
			index[ids[e.off]] = entry{off: next.end, size: e.size, expires: e.expires}
			next.end += e.size
		}
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			lf.Close()
			os.Remove(lf.Name())
			return nil, fmt.Errorf("idempotency: sweep: %w", err)
		}
	}
	if err := t.setLog(next); err != nil {
		if lf != nil {
			lf.Close()
			os.Remove(lf.Name())
		}
		return nil, err
	}
	all, _ := filepath.Glob(filepath.Join(f.dir, fmt.Sprintf("%02x-*.log", i)))
	stale := slices.DeleteFunc(all, func(name string) bool { return name == f.logPath(i, next.gen) })
	s.closeLog()
	s.log, s.head, s.index = lf, next, index
	return stale, nil
}

// removeLeftovers removes the files of the answer store's earlier layout
// (one "<id>.answer" file per answer) and temporary files a killed writer
// left over an hour ago.
func (f *File) removeLeftovers(now time.Time) error {
	ents, err := os.ReadDir(f.dir)
	if err != nil {
		return fmt.Errorf("idempotency: sweep: %w", err)
	}
	for _, e := range ents {
		name := e.Name()
		old := strings.HasSuffix(name, ".answer") && checkID(strings.TrimSuffix(name, ".answer")) == nil
		if strings.HasPrefix(name, ".tmp-") {
			info, err := e.Info()
			old = err == nil && info.ModTime().Before(now.Add(-time.Hour))
		}
		if old {
			os.Remove(filepath.Join(f.dir, name))
		}
	}
	return nil
}

// Bytes is the File's estimate of the bytes its logs take: the last
// sweep's count plus what this process kept since (what other processes
// kept since is learned at the next sweep, every minute in the gateway).
func (f *File) Bytes() int64 { return f.kept.Load() }
