package idempotency

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"time"
)

// mark is one in-flight mark in a shard's table.
type mark struct {
	id, token string
	fp        [32]byte
	until     time.Time
}

// marks is the table of live marks of one shard, as its lock file holds
// it: magic, count, CRC-32 of the entries, then each entry: the ID (64
// bytes), the token (32), the fingerprint (32), the lease end (Unix
// nanoseconds, 8).
type marks []mark

const (
	marksHead  = 8 + 4 + 4
	markSize   = 64 + 32 + 32 + 8
	marksFirst = 4 << 10 // the first read of a table: 30 marks
)

var marksMagic = [8]byte{'S', 'L', 'U', 'I', 'M', 'R', 'K', '1'}

// readMarks reads the table in f into t, reusing its memory and buf's,
// and returns the file's size as read (at least). An empty file is an
// empty table, and so is one that fails its checksum: marks are lost,
// never misread.
func readMarks(f *os.File, t marks, buf *[]byte) (marks, int, error) {
	if cap(*buf) < marksFirst {
		*buf = make([]byte, marksFirst)
	}
	b := (*buf)[:cap(*buf)]
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, 0, fmt.Errorf("idempotency: read marks: %w", err)
	}
	if n < marksHead || !bytes.Equal(b[:8], marksMagic[:]) {
		return t[:0], n, nil
	}
	count := int(binary.LittleEndian.Uint32(b[8:12]))
	size := marksHead + count*markSize
	if size > n {
		if n < len(b) || count > 1<<20 {
			return t[:0], n, nil
		}
		*buf = make([]byte, size)
		b = *buf
		if n, err = f.ReadAt(b, 0); n != size {
			return t[:0], n, nil
		}
	}
	body := b[marksHead:size]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(b[12:16]) {
		return t[:0], n, nil
	}
	t = slices.Grow(t[:0], count)[:count]
	for i := range t {
		e := body[i*markSize:]
		t[i] = mark{id: string(e[:64]), token: string(e[64:96]),
			until: time.Unix(0, int64(binary.LittleEndian.Uint64(e[128:136])))}
		copy(t[i].fp[:], e[96:128])
	}
	return t, n, nil
}

// write writes the table to f, in one write through buf, and cuts the
// file if it was longer (old: its size).
func (t marks) write(f *os.File, buf *[]byte, old int) error {
	b := append((*buf)[:0], marksMagic[:]...)
	b = append(b, make([]byte, marksHead-8)...)
	binary.LittleEndian.PutUint32(b[8:12], uint32(len(t)))
	for _, m := range t {
		b = append(append(append(b, m.id...), m.token...), m.fp[:]...)
		b = binary.LittleEndian.AppendUint64(b, uint64(m.until.UnixNano()))
	}
	binary.LittleEndian.PutUint32(b[12:16], crc32.ChecksumIEEE(b[marksHead:]))
	*buf = b
	if _, err := f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("idempotency: write marks: %w", err)
	}
	if old > len(b) {
		return f.Truncate(int64(len(b)))
	}
	return nil
}

func (t *marks) find(id string) *mark {
	for i := range *t {
		if (*t)[i].id == id {
			return &(*t)[i]
		}
	}
	return nil
}

func (t *marks) add(m mark) { *t = append(*t, m) }

func (t *marks) remove(id string) {
	*t = slices.DeleteFunc(*t, func(m mark) bool { return m.id == id })
}

// prune drops the marks whose lease has ended at now, and reports whether
// it dropped any.
func (t *marks) prune(now time.Time) bool {
	n := len(*t)
	*t = slices.DeleteFunc(*t, func(m mark) bool { return !now.Before(m.until) })
	return len(*t) != n
}
