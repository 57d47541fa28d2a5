package idempotency

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FileOptions configures a File. The zero value is usable.
type FileOptions struct {
	// MaxAnswer is the largest answer body Keep keeps, in bytes. If zero,
	// DefaultMaxAnswer (8 MiB).
	MaxAnswer int64
	// MaxBytes bounds the answer files together; past it a sweep drops
	// those expiring first (with one ttl: the oldest), never a mark. If
	// zero, DefaultMaxBytes (512 MiB).
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
// per file. An in-flight mark is the small file "<id>.mark" (token,
// fingerprint, lease end). Marks are read and written, and answers put in
// place or removed, under the flock of one of 256 lock files in ".locks/"
// (chosen by the ID), held for a few system calls and never across a call.
// Begin reads a kept answer without any lock.
//
// Sweep removes expired answers and marks, temporary files a killed writer
// left (after an hour), and, while the answers together are over
// MaxBytes, those expiring first. The owner calls Sweep periodically (the
// gateway: every minute); Keep also sweeps when this process's estimate of
// the kept bytes (the last sweep's total plus what it kept since) passes
// MaxBytes (and its first Keep sweeps, to learn the directory's size), so
// the directory can pass MaxBytes by what other processes kept since the
// last sweep. Files are not fsynced: after a power cut an
// answer may be lost (the call then runs again) but never read half.
type File struct {
	dir   string
	opts  FileOptions
	locks [256]shard
	sweep sync.Mutex
	kept  atomic.Int64 // estimate of the answer bytes in the directory
	swept atomic.Bool  // a Keep has swept once, setting kept
}

// shard is one lock file, opened at its first use.
type shard struct {
	mu sync.Mutex
	f  *os.File
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
	if err := checkLocalFS(dir); err != nil {
		return nil, err
	}
	opts.MaxAnswer = orDefault(opts.MaxAnswer, DefaultMaxAnswer)
	opts.MaxBytes = orDefault(opts.MaxBytes, DefaultMaxBytes)
	return &File{dir: dir, opts: opts}, nil
}

// Close closes the lock files. The File must not be used after.
func (f *File) Close() error {
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
	markExt    = ".mark"
	tmpPrefix  = ".tmp-"
	tmpGrace   = time.Hour
	answerHead = 8 + 32 + 8 // magic, fingerprint, expiry
	markSize   = 8 + 32 + 32 + 8
)

var (
	answerMagic = [8]byte{'S', 'L', 'U', 'I', 'A', 'N', 'S', '1'}
	markMagic   = [8]byte{'S', 'L', 'U', 'I', 'M', 'R', 'K', '1'}
)

func (f *File) path(id, ext string) string { return filepath.Join(f.dir, id+ext) }

// checkID refuses an ID that is not Key.ID's 64 hex digits: the only names
// the store makes files of.
func checkID(id string) error {
	if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		return fmt.Errorf("idempotency: store id %q is not a Key.ID", id)
	}
	return nil
}

// lock takes the flock of id's shard; the returned func lets go of it.
func (f *File) lock(id string) (func(), error) {
	s := &f.locks[hexByte(id)]
	s.mu.Lock()
	if s.f == nil {
		lf, err := os.OpenFile(filepath.Join(f.dir, ".locks", id[:2]), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("idempotency: open lock file: %w", err)
		}
		s.f = lf
	}
	if err := flock(s.f, true); err != nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("idempotency: lock: %w", err)
	}
	return func() { flock(s.f, false); s.mu.Unlock() }, nil
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
		unlock, err := f.lock(id)
		if err != nil {
			return Result{}, err
		}
		if mk, ok := f.readMark(id); ok && now.Before(mk.until) {
			unlock()
			if mk.fp != fp {
				return Result{Verdict: Conflict, Until: mk.until}, nil
			}
			return Result{Verdict: InFlight, Until: mk.until}, nil
		}
		// An answer kept since the read above is read again; a damaged one
		// (not read above) is overwritten by this mark's Keep.
		if st, err := os.Stat(f.path(id, answerExt)); err == nil && st.ModTime().After(now) && try < 2 {
			unlock()
			continue
		}
		m := Mark{ID: id, Token: NewToken(), Until: now.Add(lease), fp: fp}
		err = f.writeMark(id, m, fp)
		unlock()
		if err != nil {
			return Result{}, err
		}
		return Result{Verdict: Run, Mark: m}, nil
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

// mark is a mark file's content.
type mark struct {
	token string
	fp    [32]byte
	until time.Time
}

// readMark reads id's mark file; ok is false when there is none, or a
// damaged one (a writer killed mid-write), which counts as none.
func (f *File) readMark(id string) (mark, bool) {
	b, err := os.ReadFile(f.path(id, markExt))
	if err != nil || len(b) != markSize || !bytes.Equal(b[:8], markMagic[:]) {
		return mark{}, false
	}
	mk := mark{token: string(b[8:40]), until: time.Unix(0, int64(binary.LittleEndian.Uint64(b[72:80])))}
	copy(mk.fp[:], b[40:72])
	return mk, true
}

// writeMark writes id's mark file; the caller holds the lock.
func (f *File) writeMark(id string, m Mark, fp [32]byte) error {
	b := make([]byte, 0, markSize)
	b = append(append(append(b, markMagic[:]...), m.Token...), fp[:]...)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.Until.UnixNano()))
	if err := os.WriteFile(f.path(id, markExt), b, 0o600); err != nil {
		return fmt.Errorf("idempotency: write mark: %w", err)
	}
	return nil
}

// holds reports whether m's token is the one in id's mark file; the
// caller holds the lock.
func (f *File) holds(m Mark) bool {
	mk, ok := f.readMark(m.ID)
	return ok && mk.token == m.Token
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
	defer os.Remove(tmp) // a no-op once renamed
	if err := f.place(m, tmp); err != nil {
		return err
	}
	if f.kept.Add(n) > f.opts.MaxBytes || f.swept.CompareAndSwap(false, true) {
		f.Sweep(now) // the answer is kept: a failed sweep is the next one's
	}
	return nil
}

// place renames the answer file tmp into place for m's ID and clears the
// mark, under the lock, if m still holds it.
func (f *File) place(m Mark, tmp string) error {
	unlock, err := f.lock(m.ID)
	if err != nil {
		return err
	}
	defer unlock()
	if mk, ok := f.readMark(m.ID); !ok || mk.token != m.Token || mk.fp != m.fp {
		return ErrMarkLost
	}
	if err := os.Rename(tmp, f.path(m.ID, answerExt)); err != nil {
		return fmt.Errorf("idempotency: keep answer: %w", err)
	}
	if err := os.Remove(f.path(m.ID, markExt)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("idempotency: clear mark: %w", err)
	}
	return nil
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
	unlock, err := f.lock(m.ID)
	if err != nil {
		return err
	}
	defer unlock()
	if !f.holds(m) {
		return nil
	}
	if err := os.Remove(f.path(m.ID, markExt)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("idempotency: clear mark: %w", err)
	}
	return nil
}

var _ Store = (*File)(nil)
