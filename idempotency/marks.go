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

// marks is the live marks of one shard.
type marks []mark

// table is what a shard's lock file holds: where the shard's answer log
// is committed to, and its live marks. On disk: magic, count, CRC-32 of
// all that follows, the log's generation and committed length, then each
// mark: the ID (64 bytes), the token (32), the fingerprint (32), the lease
// end (Unix nanoseconds, 8).
type table struct {
	log   logHead
	marks marks
}

// logHead names a shard's answer log: the file "<shard>-<gen>.log", of
// which the first end bytes are committed records. Generation 0 is no log.
type logHead struct {
	gen uint64
	end int64
}

const (
	tableHead  = 8 + 4 + 4 + 8 + 8
	markSize   = 64 + 32 + 32 + 8
	tableFirst = 4 << 10 // the first read of a table: 29 marks
)

var tableMagic = [8]byte{'S', 'L', 'U', 'I', 'M', 'R', 'K', '2'}

// readTable reads the table in f into t, reusing its memory and buf's,
// and returns the file's size as read (at least) and whether it held a
// whole table. An empty file, or one that fails its checksum, holds none:
// its marks are lost, never misread, and the caller finds its log again.
func readTable(f *os.File, t *table, buf *[]byte) (size int, whole bool, err error) {
	t.log, t.marks = logHead{}, t.marks[:0]
	if cap(*buf) < tableFirst {
		*buf = make([]byte, tableFirst)
	}
	b := (*buf)[:cap(*buf)]
	n, err := f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, false, fmt.Errorf("idempotency: read marks: %w", err)
	}
	if n < tableHead || !bytes.Equal(b[:8], tableMagic[:]) {
		return n, false, nil
	}
	count := int(binary.LittleEndian.Uint32(b[8:12]))
	size = tableHead + count*markSize
	if size > n {
		if n < len(b) || count > 1<<20 {
			return n, false, nil
		}
		*buf = make([]byte, size)
		b = *buf
		if n, err = f.ReadAt(b, 0); n != size {
			return n, false, nil
		}
	}
	if crc32.ChecksumIEEE(b[16:size]) != binary.LittleEndian.Uint32(b[12:16]) {
		return n, false, nil
	}
	t.log = logHead{gen: binary.LittleEndian.Uint64(b[16:24]), end: int64(binary.LittleEndian.Uint64(b[24:32]))}
	body := b[tableHead:size]
	t.marks = slices.Grow(t.marks, count)[:count]
	for i := range t.marks {
		e := body[i*markSize:]
		t.marks[i] = mark{id: string(e[:64]), token: string(e[64:96]),
			until: time.Unix(0, int64(binary.LittleEndian.Uint64(e[128:136])))}
		copy(t.marks[i].fp[:], e[96:128])
	}
	return n, true, nil
}

// write writes the table to f, in one write through buf. Bytes past the
// table are left (its count says where it ends) unless the file is over
// twice the table and the first read's length (old: its size): then it
// is cut, so that a table that once held many marks is read in one read
// again, and a mark cleared costs no truncation.
func (t *table) write(f *os.File, buf *[]byte, old int) error {
	b := append((*buf)[:0], tableMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(t.marks)))
	b = binary.LittleEndian.AppendUint32(b, 0) // the checksum, below
	b = binary.LittleEndian.AppendUint64(b, t.log.gen)
	b = binary.LittleEndian.AppendUint64(b, uint64(t.log.end))
	for _, m := range t.marks {
		b = append(append(append(b, m.id...), m.token...), m.fp[:]...)
		b = binary.LittleEndian.AppendUint64(b, uint64(m.until.UnixNano()))
	}
	binary.LittleEndian.PutUint32(b[12:16], crc32.ChecksumIEEE(b[16:]))
	*buf = b
	if _, err := f.WriteAt(b, 0); err != nil {
		return fmt.Errorf("idempotency: write marks: %w", err)
	}
	if old > tableFirst && old > 2*len(b) {
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
