package idempotency

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync/atomic"
	"time"
	"unsafe"
)

// table is a shard's table: where its answer log is committed to, and its
// live in-flight marks, as its lock file holds them. On disk: magic,
// count, CRC-32 of all that follows, the log's generation and committed
// length, then each mark: the ID (64 bytes), the token (32), the
// fingerprint (32), the lease end (Unix nanoseconds, 8). Bytes past the
// table are not its own. (The layout is the one the store wrote with read
// and write calls before it mapped the file, so a directory that store
// left is read as it is.)
//
// The lock file is mapped shared, so a step reads and changes the table in
// memory, under the flock, without a read or a write call: the page cache
// the mapping shows is the one other processes' mappings and reads show.
// The count and the checksum are one aligned word, stored last and at
// once, so a change is whole or absent even when its process is killed in
// the middle of it:
//   - a mark is added by writing it past the table's end, which no reader
//     reads, then storing the word;
//   - any other change (a mark removed, the log head moved) first writes
//     an intent past the table's end: the bytes it will change and the
//     word before and after. A step that finds the table failing its
//     checksum and an intent made for the word it holds completes the
//     change, and keeps it if the checksum then holds.
//
// The mapping's last word is a sentinel: a file cut short under the
// mapping (by someone else) loses it, or faults when it is read, and is
// mapped again. Lock files grow, a page at a time, and never shrink.
type table struct {
	f   *os.File
	fd  int     // f's descriptor, which flock takes
	mem []byte  // the lock file, mapped shared; nil before the first step
	n   int     // marks
	log logHead // the log's generation and committed length
	pad []byte  // zeros to extend the file with
	// stage holds what a change writes (a log head, a mark) until it is
	// written: the checksum's code would move stack bytes to the heap.
	stage [16 + markSize]byte
}

// mark is one in-flight mark as a table holds it.
type mark struct {
	token string
	fp    [32]byte
	until time.Time
}

// logHead names a shard's answer log: the file "<shard>-<gen>.log", of
// which the first end bytes are committed records. Generation 0 is no log.
type logHead struct {
	gen uint64
	end int64
}

const (
	tableHead = 8 + 4 + 4 + 8 + 8
	markSize  = 64 + 32 + 32 + 8
	maxMarks  = 1 << 20
	// intentMax is the largest intent: its head, the log head and a
	// mark, each with its offset and length.
	intentMax  = intentHead + 8 + 16 + 8 + markSize
	intentHead = 8 + 4 + 4 + 8 + 8
)

var (
	tableMagic  = [8]byte{'S', 'L', 'U', 'I', 'M', 'R', 'K', '2'}
	intentMagic = [8]byte{'S', 'L', 'U', 'I', 'I', 'N', 'T', '1'}
	sentinel    = binary.LittleEndian.Uint64([]byte("SLUIEND1"))
)

// errCut is the error of a step whose lock file, or answer log, was cut
// short under its mapping while it ran.
var errCut = errors.New("idempotency: a lock file or answer log was cut short while in use")

// load brings t up to the table the lock file holds, which the caller has
// locked: it maps the file again if it grew or was cut, and completes a
// change a killed process left half done. whole is false when the file
// holds no table (new, cut short, or failing its checksum): its marks are
// lost, never misread.
func (t *table) load() (whole bool, err error) {
	t.n, t.log = 0, logHead{}
	if !t.intact() {
		if err := t.mapFile(0); err != nil {
			return false, err
		}
	}
	if [8]byte(t.mem[:8]) != tableMagic {
		return false, nil
	}
	n, sum := t.word()
	end := tableHead + n*markSize
	if n > maxMarks {
		return false, nil
	}
	if end+intentMax+8 > len(t.mem) { // another process grew the file
		if err := t.mapFile(0); err != nil {
			return false, err
		}
		if end+intentMax+8 > len(t.mem) { // the file does not hold the table
			return false, nil
		}
	}
	if crc32.ChecksumIEEE(t.mem[16:end]) != sum && !t.redo(end) {
		return false, nil
	}
	t.n, _ = t.word()
	t.log = logHead{gen: binary.LittleEndian.Uint64(t.mem[16:24]), end: int64(binary.LittleEndian.Uint64(t.mem[24:32]))}
	return true, nil
}

// intact reports whether t's mapping still shows the whole file: its
// last word holds the sentinel. A fault (the file was cut below it)
// reads as not.
func (t *table) intact() (ok bool) {
	if t.mem == nil {
		return false
	}
	var err error
	defer func() {
		if err != nil {
			ok = false
		}
	}()
	defer cutShort(&err)
	return atomic.LoadUint64(t.at(len(t.mem)-8)) == sentinel
}

// mapFile maps the lock file whole, first extending it with zeros to a
// whole number of pages that holds need bytes, and the table it holds with
// room for an intent past it, before the sentinel.
func (t *table) mapFile(need int) error {
	info, err := t.f.Stat()
	if err != nil {
		return fmt.Errorf("idempotency: lock file: %w", err)
	}
	size := int(info.Size())
	var h [16]byte
	if n, _ := t.f.ReadAt(h[:], 0); n == 16 && [8]byte(h[:8]) == tableMagic {
		if end := tableHead + int(binary.LittleEndian.Uint32(h[8:12]))*markSize; end <= size {
			need = max(need, end+intentMax)
		}
	}
	page := os.Getpagesize()
	want := (max(size, need+8) + page - 1) / page * page
	if size < want {
		if cap(t.pad) < want-size {
			t.pad = make([]byte, want-size)
		}
		// Written, not truncated up: the blocks are the file's now, so a
		// full disk is an error here rather than a fault in the mapping.
		if _, err := t.f.WriteAt(t.pad[:want-size], int64(size)); err != nil {
			return fmt.Errorf("idempotency: extend lock file: %w", err)
		}
		if cap(t.pad) > 64<<10 {
			t.pad = nil
		}
	}
	t.unmap()
	mem, err := mmap(t.f, want)
	if err != nil {
		return fmt.Errorf("idempotency: map lock file: %w", err)
	}
	t.mem = mem
	atomic.StoreUint64(t.at(want-8), sentinel)
	return nil
}

// unmap lets go of the mapping.
func (t *table) unmap() {
	if t.mem != nil {
		munmap(t.mem)
		t.mem = nil
	}
}

// at is the word at offset off of the mapping (a multiple of 8).
func (t *table) at(off int) *uint64 { return (*uint64)(unsafe.Pointer(&t.mem[off])) }

// word reads the count and the checksum.
func (t *table) word() (n int, sum uint32) {
	return int(binary.LittleEndian.Uint32(t.mem[8:12])), binary.LittleEndian.Uint32(t.mem[12:16])
}

// makeWord is the stored form of a count and a checksum: their bytes, in
// the order the file holds them, as a word of this machine.
func makeWord(n int, sum uint32) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint32(b[:4], uint32(n))
	binary.LittleEndian.PutUint32(b[4:], sum)
	return binary.NativeEndian.Uint64(b[:])
}

// patch is bytes a change writes into the table, at off.
type patch struct {
	off int
	b   []byte
}

// commit changes the table to n marks, writing the patches (at most two,
// in order of offset, none before byte 16 nor past the new end), whole or
// not at all as the type's doc says.
func (t *table) commit(n int, ps ...patch) error {
	w, intent, err := t.write(n, ps)
	if err != nil {
		return err
	}
	atomic.StoreUint64(t.at(8), w)
	if intent {
		atomic.StoreUint64(t.at(tableHead+t.n*markSize), 0) // the intent is spent
	}
	t.n = n
	return nil
}

// write is commit but for its last store: it writes the patches, and
// first their intent when they change the table's bytes, and returns the
// word that makes them the table. A change whose process is killed after
// write is completed by the next step's load.
func (t *table) write(n int, ps []patch) (w uint64, intent bool, err error) {
	old, end := tableHead+t.n*markSize, tableHead+n*markSize
	if need := max(end, old+intentMax); need+8 > len(t.mem) {
		if err := t.mapFile(need); err != nil {
			return 0, false, err
		}
	}
	sum, pos := uint32(0), 16
	for _, p := range ps {
		sum = crc32.Update(sum, crc32.IEEETable, t.mem[pos:p.off])
		sum = crc32.Update(sum, crc32.IEEETable, p.b)
		pos = p.off + len(p.b)
	}
	sum = crc32.Update(sum, crc32.IEEETable, t.mem[pos:end])
	w = makeWord(n, sum)
	if intent = len(ps) > 0 && ps[0].off < old; intent {
		t.intend(old, w, ps)
	}
	for _, p := range ps {
		copy(t.mem[p.off:], p.b)
	}
	return w, intent, nil
}

// intend writes, at off (the table's end), the intent of a change: magic,
// CRC-32 of all that follows, its length, the word it changes and the word
// it stores, then each patch: offset, length, bytes.
func (t *table) intend(off int, w uint64, ps []patch) {
	atomic.StoreUint64(t.at(off), 0) // first: an intent half written is none
	b := t.mem[off : off+intentMax]
	pos := intentHead
	for _, p := range ps {
		binary.LittleEndian.PutUint32(b[pos:], uint32(p.off))
		binary.LittleEndian.PutUint32(b[pos+4:], uint32(len(p.b)))
		pos += 8 + copy(b[pos+8:], p.b)
	}
	binary.NativeEndian.PutUint64(b[16:24], atomic.LoadUint64(t.at(8)))
	binary.NativeEndian.PutUint64(b[24:32], w)
	binary.LittleEndian.PutUint32(b[12:16], uint32(pos))
	binary.LittleEndian.PutUint32(b[8:12], crc32.ChecksumIEEE(b[12:pos]))
	atomic.StoreUint64(t.at(off), binary.NativeEndian.Uint64(intentMagic[:])) // last: the intent is whole
}

// redo completes the change whose intent lies at end, the end of a table
// that fails its checksum, if it was made for the word the table holds,
// and reports whether the table then passes its checksum.
func (t *table) redo(end int) bool {
	b := t.mem[end : end+intentMax]
	size := int(binary.LittleEndian.Uint32(b[12:16]))
	if [8]byte(b[:8]) != intentMagic || size < intentHead || size > intentMax ||
		crc32.ChecksumIEEE(b[12:size]) != binary.LittleEndian.Uint32(b[8:12]) ||
		binary.NativeEndian.Uint64(b[16:24]) != atomic.LoadUint64(t.at(8)) {
		return false
	}
	for pos := intentHead; pos+8 <= size; {
		off, n := int(binary.LittleEndian.Uint32(b[pos:])), int(binary.LittleEndian.Uint32(b[pos+4:]))
		if off < 16 || off+n > end || pos+8+n > size {
			return false
		}
		copy(t.mem[off:], b[pos+8:pos+8+n])
		pos += 8 + n
	}
	atomic.StoreUint64(t.at(8), binary.NativeEndian.Uint64(b[24:32]))
	n, sum := t.word()
	return n <= maxMarks && tableHead+n*markSize <= end && crc32.ChecksumIEEE(t.mem[16:tableHead+n*markSize]) == sum
}

// reset writes a table of no marks whose log is h over whatever the file
// held.
func (t *table) reset(h logHead) error {
	if tableHead+intentMax+8 > len(t.mem) {
		if err := t.mapFile(0); err != nil {
			return err
		}
	}
	copy(t.mem, tableMagic[:])
	binary.LittleEndian.PutUint64(t.mem[16:24], h.gen)
	binary.LittleEndian.PutUint64(t.mem[24:32], uint64(h.end))
	atomic.StoreUint64(t.at(8), makeWord(0, crc32.ChecksumIEEE(t.mem[16:32])))
	t.n, t.log = 0, h
	return nil
}

// slot is mark i's bytes.
func (t *table) slot(i int) []byte {
	off := tableHead + i*markSize
	return t.mem[off : off+markSize]
}

// find returns the index of id's mark, or -1.
func (t *table) find(id string) int {
	for i := range t.n {
		if string(t.slot(i)[:64]) == id {
			return i
		}
	}
	return -1
}

// fp is mark i's fingerprint.
func (t *table) fp(i int) [32]byte { return [32]byte(t.slot(i)[96:128]) }

// holds reports whether mark i is the one taken with token for fp.
func (t *table) holds(i int, token string, fp [32]byte) bool {
	e := t.slot(i)
	return string(e[64:96]) == token && [32]byte(e[96:128]) == fp
}

// until is when mark i's lease ends, in Unix nanoseconds.
func (t *table) until(i int) int64 {
	return int64(binary.LittleEndian.Uint64(t.slot(i)[128:136]))
}

// add adds a mark for id.
func (t *table) add(id string, m mark) error {
	e := t.stage[16:]
	copy(e[:64], id)
	copy(e[64:96], m.token)
	copy(e[96:128], m.fp[:])
	binary.LittleEndian.PutUint64(e[128:], uint64(m.until.UnixNano()))
	return t.commit(t.n+1, patch{tableHead + t.n*markSize, e})
}

// remove removes mark i, the last mark taking its place, and with h sets
// the log head in the same change.
func (t *table) remove(i int, h *logHead) error {
	var ps [2]patch
	n := 0
	if h != nil {
		ps[n] = patch{16, t.stageHead(*h)}
		n++
	}
	if i != t.n-1 {
		last := t.stage[16:] // a copy: the change may map the file again
		copy(last, t.slot(t.n-1))
		ps[n] = patch{tableHead + i*markSize, last}
		n++
	}
	if err := t.commit(t.n-1, ps[:n]...); err != nil {
		return err
	}
	if h != nil {
		t.log = *h
	}
	return nil
}

// setLog sets the log head.
func (t *table) setLog(h logHead) error {
	if err := t.commit(t.n, patch{16, t.stageHead(h)}); err != nil {
		return err
	}
	t.log = h
	return nil
}

// stageHead stages h as the table holds it.
func (t *table) stageHead(h logHead) []byte {
	b := t.stage[:16]
	binary.LittleEndian.PutUint64(b[:8], h.gen)
	binary.LittleEndian.PutUint64(b[8:], uint64(h.end))
	return b
}

// prune removes the marks whose lease has ended at now, and returns how
// many it removed.
func (t *table) prune(now time.Time) (int, error) {
	removed := 0
	for i := t.n - 1; i >= 0; i-- {
		if now.UnixNano() >= t.until(i) {
			if err := t.remove(i, nil); err != nil {
				return removed, err
			}
			removed++
		}
	}
	return removed, nil
}
