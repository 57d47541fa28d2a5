package idempotency

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/state"
)

// FileOptions configures a File. The zero value is usable.
type FileOptions struct {
	// MaxAnswer is the largest answer body Keep keeps, in bytes. If zero,
	// DefaultMaxAnswer (8 MiB).
	MaxAnswer int64
	// MaxBytes bounds the bytes the answer logs' records take together
	// (each log runs in zeros past them, 16 KiB or up to a quarter of its
	// length, 64 KiB at most); past it a sweep drops the answers expiring
	// first (with one ttl: the oldest) down to nine tenths of it, never a
	// mark. If zero, DefaultMaxBytes (512 MiB).
	MaxBytes int64
}

// File is a Store in a directory shared by every process of one host: the
// gateway's is "<state dir>/answers", beside (not inside) the small
// records of breakers, ledgers and limits. It is safe for concurrent use.
//
// IDs fall into 256 shards by their first byte. A shard is two files
// (0600, in a 0700 directory): its lock file, ".locks/00" to ".locks/ff",
// and its answer log, "00-<gen>.log". The lock file holds the shard's
// table: its live in-flight marks (ID, token, fingerprint, lease end) and
// how far the log is committed. Every step — Begin, Keep, Release — reads
// and changes the table under the lock file's flock (lock, read, change,
// unlock, as lockedfile.Transform does), which is held for a few system
// calls and never across a call. The lock file is mapped shared, so the
// table is read and changed in memory: a step's system calls are the
// flock's two and a replay's one read; a change is whole or absent even
// when its process is killed in the middle of it. Keep appends the answer
// to the log as one record, copied into a mapped window at the log's end
// (a write call only when the window moves on, every 16 to 64 KiB, or for
// a record that does not fit it), and commits it by the table's change,
// so a reader sees the whole answer or none, and no answer costs a file
// of its own: creating one cost more than the rest of a call. A log runs
// in zeros past its last record: 16 KiB, or up to a quarter of its length
// (64 KiB at most). Each process indexes the logs it reads (ID to offset,
// reading only the records' heads, and only those appended since it last
// looked), so Begin finds a kept answer with a map lookup and one read. A
// table that fails its checksum (a power cut mid-write) reads as holding
// no marks, and its log is found again by reading it. A lock file takes
// a page at least (4 KiB), more while its shard holds more than 28 marks;
// it never shrinks.
//
// Sweep removes expired marks, and rewrites a log without its expired and
// replaced answers once they are a quarter of it, and, while the logs
// together are over MaxBytes, without the answers expiring first. The
// owner calls Sweep periodically (the gateway: every minute); Keep also
// starts one, in the background, when this process's estimate of the
// kept bytes (the last sweep's total plus what it kept since) passes
// MaxBytes, and at its first Keep, to learn the directory's size; so the
// directory can pass MaxBytes by what was kept while a sweep ran, and by
// what other processes kept since the last sweep. Close waits for a sweep
// started by Keep. Files are not fsynced: after a power cut an answer may
// be lost (the call then runs again) but never read half.
type File struct {
	dir   string
	opts  FileOptions
	locks [256]shard
	sweep sync.Mutex
	kept  atomic.Int64 // estimate of the answer bytes in the directory
	added atomic.Int64 // the bytes this File has kept, ever
	swept atomic.Bool  // a Keep has started a sweep once, to learn kept
	busy  atomic.Bool  // a sweep started by Keep is running
	again atomic.Bool  // Keep asked for a sweep since that one began
	at    atomic.Int64 // the now of the latest sweep Keep asked for
	bg    sync.WaitGroup
}

// shard is one lock file and its log, opened at their first use.
type shard struct {
	mu    sync.Mutex
	t     table // the lock file and the table it holds
	log   *os.File
	win   window  // where records are appended to log
	head  logHead // the log open and how far index has read it
	index map[[32]byte]entry
	rec   []byte // what a record is encoded into
}

// OpenFile opens the answers directory dir, creating it (0700) if needed
// and making it private. It refuses a directory on a network file system.
func OpenFile(dir string, opts FileOptions) (*File, error) {
	if dir == "" {
		return nil, errors.New("idempotency: empty answers directory")
	}
	if !fileStoreSupported {
		return nil, flock(-1, true)
	}
	for _, d := range []string{dir, filepath.Join(dir, ".locks")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("idempotency: create answers directory: %w", err)
		}
		if err := os.Chmod(d, 0o700); err != nil {
			return nil, fmt.Errorf("idempotency: make answers directory private: %w", err)
		}
	}
	switch fs, err := state.NetworkFS(dir); {
	case err != nil:
		return nil, fmt.Errorf("idempotency: answers directory %s: %w", dir, err)
	case fs != "":
		return nil, fmt.Errorf("idempotency: answers directory %s is on %s, where file locks do not hold between hosts: choose a local directory, or share answers through redis", dir, fs)
	}
	opts.MaxAnswer = orDefault(opts.MaxAnswer, DefaultMaxAnswer)
	opts.MaxBytes = orDefault(opts.MaxBytes, DefaultMaxBytes)
	return &File{dir: dir, opts: opts}, nil
}

// Close waits for a sweep Keep started, and closes the lock files and
// logs. The File must not be used after.
func (f *File) Close() error {
	f.bg.Wait()
	for i := range f.locks {
		s := &f.locks[i]
		s.mu.Lock()
		s.t.unmap()
		s.closeLog()
		if s.t.f != nil {
			s.t.f.Close()
			s.t.f = nil
		}
		s.mu.Unlock()
	}
	return nil
}

// checkID refuses an ID that is not Key.ID's 64 hex digits: the only names
// the store makes files of.
func checkID(id string) error {
	ok := len(id) == 64
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = '0' <= c && c <= '9' || 'a' <= c && c <= 'f'
	}
	if !ok {
		return fmt.Errorf("idempotency: store id %q is not a Key.ID", id)
	}
	return nil
}

// transform runs change on id's shard under its flock.
func (f *File) transform(id string, change func(s *shard, t *table) error) error {
	return f.transformShard(hexByte(id), change)
}

// transformShard is transform on shard i: it loads the table, finds the
// log again if the table was lost, brings the log's index up to date,
// then runs change, which changes the table through its methods.
func (f *File) transformShard(i int, change func(s *shard, t *table) error) (err error) {
	s := &f.locks[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t.f == nil {
		lf, err := os.OpenFile(filepath.Join(f.dir, ".locks", fmt.Sprintf("%02x", i)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("idempotency: open lock file: %w", err)
		}
		s.t.f, s.t.fd = lf, int(lf.Fd())
	}
	if err := flock(s.t.fd, true); err != nil {
		return fmt.Errorf("idempotency: lock: %w", err)
	}
	defer flock(s.t.fd, false)
	defer func() {
		if errors.Is(err, errCut) { // map it again, and read the log again, next time
			s.t.unmap()
			s.win.unmap()
			s.head = logHead{gen: ^uint64(0)}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer cutShort(&err)
	whole, err := s.t.load()
	if err != nil {
		return err
	}
	if !whole {
		h, err := f.recoverLog(i)
		if err != nil {
			return err
		}
		if err := s.t.reset(h); err != nil {
			return err
		}
	}
	if err := f.syncLog(i, s, &s.t); err != nil {
		return err
	}
	return change(s, &s.t)
}

// cutShort turns a fault in a mapping (its file cut short by someone else
// while a step ran) into errCut; any other panic goes on.
func cutShort(err *error) {
	r := recover()
	if r == nil {
		return
	}
	if _, ok := r.(interface{ Addr() uintptr }); !ok {
		panic(r)
	}
	*err = errCut
}

func hexByte(id string) int {
	v := func(c byte) int {
		if c >= 'a' {
			return int(c-'a') + 10
		}
		return int(c - '0')
	}
	return v(id[0])<<4 | v(id[1])
}

// Begin implements Store.
func (f *File) Begin(id string, fp [32]byte, lease time.Duration, now time.Time) (Result, error) {
	if err := checkID(id); err != nil {
		return Result{}, err
	}
	var r Result
	err := f.transform(id, func(s *shard, t *table) error {
		if _, err := t.prune(now); err != nil {
			return err
		}
		if e, ok := s.index[binID(id)]; ok && e.liveAt(now) {
			if kfp, a, ok := readRecord(s.log, e); ok {
				r = Result{Verdict: Replay, Answer: a}
				if kfp != fp {
					r = Result{Verdict: Conflict}
				}
				return nil
			}
			// A damaged answer counts as absent: this mark's Keep replaces it.
		}
		if i := t.find(id); i >= 0 {
			r = Result{Verdict: InFlight, Until: time.Unix(0, t.until(i))}
			if t.fp(i) != fp {
				r.Verdict = Conflict
			}
			return nil
		}
		m := Mark{ID: id, Token: NewToken(), Until: now.Add(lease), fp: fp}
		if err := t.add(id, mark{token: m.Token, fp: fp, until: m.Until}); err != nil {
			return err
		}
		r = Result{Verdict: Run, Mark: m}
		return nil
	})
	return r, err
}

// Keep implements Store.
func (f *File) Keep(m Mark, a *Answer, ttl time.Duration, now time.Time) error {
	if err := checkID(m.ID); err != nil {
		return err
	}
	if a.Size() > f.opts.MaxAnswer {
		if err := f.Release(m); err != nil {
			return err
		}
		return ErrTooLarge
	}
	var n int64
	err := f.transform(m.ID, func(s *shard, t *table) error {
		i := t.find(m.ID)
		if i < 0 || !t.holds(i, m.Token, m.fp) {
			return ErrMarkLost
		}
		var err error
		n, err = f.appendAnswer(hexByte(m.ID), s, t, i, m, a, now, now.Add(ttl))
		return err
	})
	if err != nil {
		return err
	}
	f.added.Add(n)
	if f.kept.Add(n) > f.opts.MaxBytes || f.swept.CompareAndSwap(false, true) {
		f.sweepSoon(now)
	}
	return nil
}

// sweepSoon starts a sweep in the background, or, if one Keep started is
// running, has it sweep once more when done: Keep does not wait for it.
// Its errors are left to the owner's next Sweep to report.
func (f *File) sweepSoon(now time.Time) {
	f.at.Store(now.UnixNano())
	f.again.Store(true)
	if !f.busy.CompareAndSwap(false, true) {
		return
	}
	f.bg.Go(func() {
		for {
			for f.again.Swap(false) {
				f.Sweep(time.Unix(0, f.at.Load()))
			}
			f.busy.Store(false)
			if !f.again.Load() || !f.busy.CompareAndSwap(false, true) {
				return
			}
		}
	})
}

// Release implements Store.
func (f *File) Release(m Mark) error {
	if err := checkID(m.ID); err != nil {
		return err
	}
	return f.transform(m.ID, func(_ *shard, t *table) error {
		if i := t.find(m.ID); i >= 0 && string(t.slot(i)[64:96]) == m.Token {
			return t.remove(i, nil)
		}
		return nil
	})
}

var _ Store = (*File)(nil)
