package idempotency

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	// MaxBytes bounds the space the answer files take on disk together
	// (whole blocks: a 1 KiB answer takes 4 KiB on most file systems);
	// past it a sweep drops those expiring first (with one ttl: the
	// oldest) down to nine tenths of it, never a mark. If zero,
	// DefaultMaxBytes (512 MiB).
	MaxBytes int64
}

// File is a Store in a directory shared by every process of one host: the
// gateway's is "<state dir>/answers", beside (not inside) the small
// records of breakers, ledgers and limits. It is safe for concurrent use.
//
// An ID's kept answer is the file "<id>.answer" (0600, in a 0700
// directory): a header (magic, fingerprint, expiry) and the encoded
// answer. It is written whole to a temporary file and renamed into place,
// so a reader sees the whole answer or none, and its modification time is
// set to its expiry, so a sweep learns sizes and expiries from one lstat
// per file. Begin reads a kept answer without any lock.
//
// In-flight marks live in 256 small lock files, ".locks/00" to
// ".locks/ff", chosen by the ID's first byte: each holds the table of its
// IDs' live marks (ID, token, fingerprint, lease end), read and rewritten
// under its flock (lock, read, change, write, unlock, as
// lockedfile.Transform does), which is held for a few system calls and
// never across a call. Taking a mark thus creates no file. Answers are
// put in place or removed under the same flock. A table that fails its
// checksum (a power cut mid-write) reads as holding no marks.
//
// Sweep removes expired answers and marks, temporary files a killed writer
// left (after an hour), and, while the answers together are over
// MaxBytes, those expiring first. The owner calls Sweep periodically (the
// gateway: every minute); Keep also starts one, in the background,
// when this process's estimate of the kept bytes (the last sweep's total
// plus what it kept since) passes MaxBytes, and at its first Keep, to
// learn the directory's size; so the directory can pass MaxBytes by what
// was kept while a sweep ran, and by what other processes kept since the
// last sweep. Close waits for a sweep started by Keep. Files are not fsynced: after a power cut an
// answer may be lost (the call then runs again) but never read half.
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

// shard is one lock file, opened at its first use.
type shard struct {
	mu  sync.Mutex
	f   *os.File
	buf []byte // what the table is read into and written from
	t   marks  // the table as last read
}

// OpenFile opens the answers directory dir, creating it (0700) if needed
// and making it private. It refuses a directory on a network file system.
func OpenFile(dir string, opts FileOptions) (*File, error) {
	if dir == "" {
		return nil, errors.New("idempotency: empty answers directory")
	}
	if !fileStoreSupported {
		return nil, flock(nil, true)
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

// Close waits for a sweep Keep started, and closes the lock files. The
// File must not be used after.
func (f *File) Close() error {
	f.bg.Wait()
	for i := range f.locks {
		s := &f.locks[i]
		s.mu.Lock()
		if s.f != nil {
			s.f.Close()
			s.f = nil
		}
		s.mu.Unlock()
	}
	return nil
}

const (
	answerExt  = ".answer"
	tmpPrefix  = ".tmp-"
	tmpGrace   = time.Hour
	answerHead = 8 + 32 + 8 // magic, fingerprint, expiry
)

var answerMagic = [8]byte{'S', 'L', 'U', 'I', 'A', 'N', 'S', '1'}

func (f *File) path(id, ext string) string { return filepath.Join(f.dir, id+ext) }

// checkID refuses an ID that is not Key.ID's 64 hex digits: the only names
// the store makes files of.
func checkID(id string) error {
	if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("idempotency: store id %q is not a Key.ID", id)
	}
	return nil
}

// transform runs change on the mark table of id's shard under its flock,
// and writes the table back if change reports it changed.
func (f *File) transform(id string, change func(t *marks) (bool, error)) error {
	return f.transformShard(hexByte(id), change)
}

// transformShard is transform on shard i.
func (f *File) transformShard(i int, change func(t *marks) (bool, error)) error {
	s := &f.locks[i]
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f == nil {
		lf, err := os.OpenFile(filepath.Join(f.dir, ".locks", fmt.Sprintf("%02x", i)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return fmt.Errorf("idempotency: open lock file: %w", err)
		}
		s.f = lf
	}
	if err := flock(s.f, true); err != nil {
		return fmt.Errorf("idempotency: lock: %w", err)
	}
	defer flock(s.f, false)
	t, size, err := readMarks(s.f, s.t, &s.buf)
	if err != nil {
		return err
	}
	changed, err := change(&t)
	if err == nil && changed {
		err = t.write(s.f, &s.buf, size)
	}
	s.t = t[:0]
	return err
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
	for try := 0; ; try++ {
		if r, ok := f.readAnswer(id, fp, now); ok {
			return r, nil
		}
		var r Result
		again := false
		err := f.transform(id, func(t *marks) (bool, error) {
			pruned := t.prune(now)
			if mk := t.find(id); mk != nil {
				r = Result{Verdict: InFlight, Until: mk.until}
				if mk.fp != fp {
					r.Verdict = Conflict
				}
				return pruned, nil
			}
			// An answer kept since the read above is read again; a damaged
			// one (not read above) is overwritten by this mark's Keep.
			if st, err := os.Stat(f.path(id, answerExt)); err == nil && st.ModTime().After(now) && try < 2 {
				again = true
				return pruned, nil
			}
			m := Mark{ID: id, Token: NewToken(), Until: now.Add(lease), fp: fp}
			t.add(mark{id: id, token: m.Token, fp: fp, until: m.Until})
			r = Result{Verdict: Run, Mark: m}
			return true, nil
		})
		if err != nil || !again {
			return r, err
		}
	}
}

// readAnswer reads id's kept answer, without a lock: ok when one is kept
// and live at now, the result Replay or Conflict.
func (f *File) readAnswer(id string, fp [32]byte, now time.Time) (Result, bool) {
	b, err := os.ReadFile(f.path(id, answerExt))
	if err != nil || len(b) < answerHead || !bytes.Equal(b[:8], answerMagic[:]) {
		return Result{}, false
	}
	expires := time.Unix(0, int64(binary.LittleEndian.Uint64(b[40:48])))
	if !now.Before(expires) {
		return Result{}, false
	}
	if !bytes.Equal(b[8:40], fp[:]) {
		return Result{Verdict: Conflict}, true
	}
	a := new(Answer)
	if a.decode(b[answerHead:]) != nil {
		return Result{}, false
	}
	return Result{Verdict: Replay, Answer: a}, true
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
	expires := now.Add(ttl)
	tmp, n, err := f.writeTemp(m.fp, a, now, expires)
	if err != nil {
		return err
	}
	if err := f.place(m, tmp); err != nil {
		os.Remove(tmp)
		return err
	}
	n = (n + 4095) &^ 4095 // whole blocks
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

// place renames the answer file tmp into place for m's ID and clears the
// mark, under the lock, if m still holds it.
func (f *File) place(m Mark, tmp string) error {
	return f.transform(m.ID, func(t *marks) (bool, error) {
		mk := t.find(m.ID)
		if mk == nil || mk.token != m.Token || mk.fp != m.fp {
			return false, ErrMarkLost
		}
		if err := os.Rename(tmp, f.path(m.ID, answerExt)); err != nil {
			return false, fmt.Errorf("idempotency: keep answer: %w", err)
		}
		t.remove(m.ID)
		return true, nil
	})
}

// writeTemp writes a's answer file under a temporary name, with its
// modification time set to expires, and returns that name and its size.
func (f *File) writeTemp(fp [32]byte, a *Answer, now, expires time.Time) (string, int64, error) {
	k := *a
	k.Kept = now
	enc, _ := k.MarshalBinary()
	b := make([]byte, 0, answerHead+len(enc))
	b = append(append(b, answerMagic[:]...), fp[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(expires.UnixNano()))
	b = append(b, enc...)
	t, err := os.CreateTemp(f.dir, tmpPrefix+"*")
	if err != nil {
		return "", 0, fmt.Errorf("idempotency: keep answer: %w", err)
	}
	_, err = t.Write(b)
	if cerr := t.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chtimes(t.Name(), expires, expires)
	}
	if err != nil {
		os.Remove(t.Name())
		return "", 0, fmt.Errorf("idempotency: keep answer: %w", err)
	}
	return t.Name(), int64(len(b)), nil
}

// Release implements Store.
func (f *File) Release(m Mark) error {
	if err := checkID(m.ID); err != nil {
		return err
	}
	return f.transform(m.ID, func(t *marks) (bool, error) {
		if mk := t.find(m.ID); mk != nil && mk.token == m.Token {
			t.remove(m.ID)
			return true, nil
		}
		return false, nil
	})
}

var _ Store = (*File)(nil)
