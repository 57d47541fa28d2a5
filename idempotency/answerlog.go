package idempotency

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A shard's kept answers are records appended to its log, the file
// "<shard>-<gen>.log". A record: magic, CRC-32 of all that follows, the
// record's length, the ID (32 bytes), the fingerprint (32), the expiry
// (Unix nanoseconds) and the encoded answer. The shard's table says how
// many bytes of the log are committed; a record is appended past them and
// committed by the table's next change, so a record cut short by a crash
// or a full disk is never read, and the next append writes over it. A
// later record of an ID replaces an earlier one; Sweep copies the live
// records into the next generation's log and removes the old one.
const recordHead = 4 + 4 + 4 + 32 + 32 + 8

var recordMagic = [4]byte{'S', 'L', 'A', '1'}

// entry is where an ID's latest record lies in its shard's log.
type entry struct {
	off, size int64
	expires   int64 // Unix nanoseconds
}

func (e entry) liveAt(now time.Time) bool { return now.UnixNano() < e.expires }

// binID is an ID's 64 hex digits as the 32 bytes a record holds.
func binID(id string) (b [32]byte) {
	hex.Decode(b[:], []byte(id))
	return b
}

// appendRecord encodes a, kept at now until expires for ID b and
// fingerprint fp, as one record.
func appendRecord(dst []byte, b, fp [32]byte, a *Answer, now, expires time.Time) []byte {
	k := *a
	k.Kept = now
	start := len(dst)
	dst = append(dst, recordMagic[:]...)
	dst = binary.LittleEndian.AppendUint32(dst, 0) // the checksum, below
	dst = binary.LittleEndian.AppendUint32(dst, 0) // the length, below
	dst = append(append(dst, b[:]...), fp[:]...)
	dst = binary.LittleEndian.AppendUint64(dst, uint64(expires.UnixNano()))
	dst = k.appendBinary(dst)
	r := dst[start:]
	binary.LittleEndian.PutUint32(r[8:12], uint32(len(r)))
	binary.LittleEndian.PutUint32(r[4:8], crc32.ChecksumIEEE(r[8:]))
	return dst
}

// parseHead reads a record's head: its ID, its entry at off, and whether
// the head is one (magic, a length that fits before limit).
func parseHead(h []byte, off, limit int64) ([32]byte, entry, bool) {
	var id [32]byte
	if len(h) < recordHead || !bytes.Equal(h[:4], recordMagic[:]) {
		return id, entry{}, false
	}
	size := int64(binary.LittleEndian.Uint32(h[8:12]))
	if size < recordHead || off+size > limit {
		return id, entry{}, false
	}
	copy(id[:], h[12:44])
	return id, entry{off: off, size: size, expires: int64(binary.LittleEndian.Uint64(h[76:84]))}, true
}

// readRecord reads the record at e from log and checks it whole: its
// fingerprint and answer, or ok false for a damaged one.
func readRecord(log *os.File, e entry) (fp [32]byte, a *Answer, ok bool) {
	b := make([]byte, e.size)
	if _, err := log.ReadAt(b, e.off); err != nil {
		return fp, nil, false
	}
	if !bytes.Equal(b[:4], recordMagic[:]) || crc32.ChecksumIEEE(b[8:]) != binary.LittleEndian.Uint32(b[4:8]) {
		return fp, nil, false
	}
	copy(fp[:], b[44:76])
	a = new(Answer)
	if a.decode(b[recordHead:]) != nil {
		return fp, nil, false
	}
	return fp, a, true
}

// logPath is the file of shard i's log of generation gen.
func (f *File) logPath(i int, gen uint64) string {
	return filepath.Join(f.dir, fmt.Sprintf("%02x-%d.log", i, gen))
}

// syncLog brings s's open log and index up to the table's committed
// length, reading the heads of the records appended since (by any
// process), or the whole log when its generation changed. A committed
// record whose head is not one ends the log there (the table is set back
// to it).
func (f *File) syncLog(i int, s *shard, t *table) error {
	if s.log != nil && (s.head.gen != t.log.gen || t.log.end < s.head.end) {
		s.closeLog()
	}
	if s.log == nil {
		clear(s.index)
		s.head = logHead{gen: t.log.gen}
		if t.log.gen == 0 {
			return nil
		}
		lf, err := os.OpenFile(f.logPath(i, t.log.gen), os.O_RDWR, 0)
		if errors.Is(err, fs.ErrNotExist) { // none yet (Sweep left none), or lost
			if t.log.end != 0 {
				return t.setLog(logHead{gen: t.log.gen})
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("idempotency: open answer log: %w", err)
		}
		s.log = lf
	}
	if s.index == nil {
		s.index = make(map[[32]byte]entry)
	}
	if s.head.end == t.log.end {
		return nil
	}
	// The heads are read in order through a buffer, so a log read whole
	// (another process's records, a new generation) costs a few large
	// reads, not one per record.
	r := headReaders.Get().(*bufio.Reader)
	defer func() { r.Reset(nil); headReaders.Put(r) }()
	r.Reset(io.NewSectionReader(s.log, s.head.end, t.log.end-s.head.end))
	for s.head.end < t.log.end {
		h, _ := r.Peek(recordHead)
		id, e, ok := parseHead(h, s.head.end, t.log.end)
		if !ok {
			return t.setLog(s.head)
		}
		s.index[id] = e
		s.head.end += e.size
		r.Discard(int(e.size))
	}
	return nil
}

// headReaders are the buffers syncLog reads records' heads through.
var headReaders = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// recoverLog finds shard i's log when its table was lost (never written,
// or damaged): the latest generation on disk, committed up to the end of
// its last whole record.
func (f *File) recoverLog(i int) (logHead, error) {
	names, err := filepath.Glob(filepath.Join(f.dir, fmt.Sprintf("%02x-*.log", i)))
	if err != nil {
		return logHead{}, err
	}
	var h logHead
	for _, name := range names {
		s := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), fmt.Sprintf("%02x-", i)), ".log")
		if gen, err := strconv.ParseUint(s, 10, 64); err == nil && gen > h.gen {
			h.gen = gen
		}
	}
	if h.gen == 0 {
		return h, nil
	}
	lf, err := os.Open(f.logPath(i, h.gen))
	if err != nil {
		return logHead{}, fmt.Errorf("idempotency: open answer log: %w", err)
	}
	defer lf.Close()
	b, err := io.ReadAll(lf)
	if err != nil {
		return logHead{}, fmt.Errorf("idempotency: read answer log: %w", err)
	}
	for {
		_, e, ok := parseHead(b[h.end:], h.end, int64(len(b)))
		if !ok {
			return h, nil
		}
		h.end += e.size
	}
}

// appendAnswer appends a's record for m to shard i's log at its
// committed end, creating the log if it has none, and commits it, clearing
// mark j, m's, in the same change; it returns the record's size.
func (f *File) appendAnswer(i int, s *shard, t *table, j int, m Mark, a *Answer, now, expires time.Time) (int64, error) {
	h := t.log
	if s.log == nil {
		h.gen = max(h.gen, 1)
		lf, err := os.OpenFile(f.logPath(i, h.gen), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return 0, fmt.Errorf("idempotency: keep answer: %w", err)
		}
		s.log, s.head = lf, h
		if s.index == nil {
			s.index = make(map[[32]byte]entry)
		}
	}
	id := binID(m.ID)
	s.rec = appendRecord(s.rec[:0], id, m.fp, a, now, expires)
	if !s.win.put(s.log, s.rec, h.end) {
		if _, err := s.log.WriteAt(s.rec, h.end); err != nil {
			return 0, fmt.Errorf("idempotency: keep answer: %w", err)
		}
	}
	e := entry{off: h.end, size: int64(len(s.rec)), expires: expires.UnixNano()}
	if cap(s.rec) > 64<<10 {
		s.rec = nil // a large answer's buffer is not held
	}
	h.end += e.size
	if err := t.remove(j, &h); err != nil {
		return 0, err
	}
	s.index[id] = e
	s.head = h
	return e.size, nil
}
