//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package state

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const fileStoreSupported = true

// pageSize is the stride of the store's region: one state file per page.
var pageSize = os.Getpagesize()

// mapping is one open state file, mapped into one page of the store's
// region.
type mapping struct {
	fd       int
	page     int
	w        *words
	dev, ino uint64
}

// region is address space reserved when the store opens: one page for each
// state file it may hold open at once. A state file is mapped over its page
// (MAP_FIXED), and when it is closed its page is mapped to anonymous memory
// again, so a reader still holding the address of a closed file reads zeros
// or the page's next file, never memory that belongs to something else; it
// then sees that its view went stale and reads again.
type region struct {
	base  unsafe.Pointer
	pages int
}

const protRW = unix.PROT_READ | unix.PROT_WRITE

func reserveRegion(pages int) (region, error) {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(pages*pageSize), protRW, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return region{}, fmt.Errorf("state: reserve memory for %d state files: %w", pages, err)
	}
	return region{base: p, pages: pages}, nil
}

func (r region) page(i int) unsafe.Pointer { return unsafe.Add(r.base, i*pageSize) }

// mapFile maps the state file fd over page i.
func (r region) mapFile(i, fd int) (*words, error) {
	fileSyscalls.Add(1)
	p, err := unix.MmapPtr(fd, 0, r.page(i), fileSize, protRW, unix.MAP_SHARED|unix.MAP_FIXED)
	if err != nil {
		return nil, err
	}
	return (*words)(p), nil
}

// blank maps anonymous memory over page i, letting go of its file.
func (r region) blank(i int) error {
	fileSyscalls.Add(1)
	_, err := unix.MmapPtr(-1, 0, r.page(i), uintptr(pageSize), protRW, unix.MAP_PRIVATE|unix.MAP_ANON|unix.MAP_FIXED)
	return err
}

func (r region) release() error {
	if r.base == nil {
		return nil
	}
	return unix.MunmapPtr(r.base, uintptr(r.pages*pageSize))
}

// openState opens the state file at path. A missing file is created
// (complete, in one step) when create is set; otherwise exists is false.
// created reports that this call linked the file into place.
// A new file removed again before it could be opened (a sweep removes
// empty records) is created again, a few times at most.
func openState(path string, init *payload, create bool) (fd int, exists, created bool, err error) {
	fd, err = openExisting(path)
	for try := 0; errors.Is(err, syscall.ENOENT) && try < 8; try++ {
		if !create {
			return -1, false, false, nil
		}
		if created, err = createFile(path, init); err == nil {
			fd, err = openExisting(path)
		}
	}
	if err != nil {
		return -1, false, false, fmt.Errorf("state: open state file: %w", err)
	}
	return fd, true, created, nil
}

func openExisting(path string) (int, error) {
	fileSyscalls.Add(1)
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0)
		return err
	})
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: path, Err: err}
	}
	return fd, nil
}

// createFile writes a complete, empty state file next to path and links it
// into place, so no process ever sees a partly written new file. Losing
// the race to another creator is fine: created is then false.
func createFile(path string, p *payload) (created bool, err error) {
	fileSyscalls.Add(1)
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	var w words
	w[wMagic], w[wGen], w[wLen] = fileMagic, rand.Uint64()|1, uint64(p.n)
	copy(w[headerWords:], p.w[:])
	_, err = tmp.Write(unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), fileSize)) // native byte order
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	if err = os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return false, nil
	}
	return err == nil, err
}

// identify records the file's identity and reports its size.
func (m *mapping) identify() (int64, error) {
	fileSyscalls.Add(1)
	var st syscall.Stat_t
	if err := syscall.Fstat(m.fd, &st); err != nil {
		return 0, err
	}
	m.dev, m.ino = uint64(st.Dev), uint64(st.Ino)
	return st.Size, nil
}

// ensureSize extends a short file to fileSize, and clears it, under the
// file lock.
func (m *mapping) ensureSize() (grew bool, err error) {
	size, err := m.identify()
	if err != nil || size >= fileSize {
		return false, err
	}
	if err = m.lock(); err != nil {
		return false, err
	}
	defer m.unlock()
	if size, err = m.identify(); err != nil || size >= fileSize {
		return false, err
	}
	return true, m.grow()
}

// grow extends the file to fileSize and clears it, so that what was left
// of it reads as no record; the caller holds the file lock and saw
// it shorter.
func (m *mapping) grow() error {
	fileSyscalls.Add(1)
	if err := retryEINTR(func() error { return syscall.Ftruncate(m.fd, fileSize) }); err != nil {
		return err
	}
	if clearWords(m.w) == readFault {
		return errors.New("the file was cut short again")
	}
	return nil
}

func (m *mapping) lock() error {
	fileSyscalls.Add(1)
	return retryEINTR(func() error { return syscall.Flock(m.fd, syscall.LOCK_EX) })
}

func (m *mapping) unlock() error {
	fileSyscalls.Add(1)
	return retryEINTR(func() error { return syscall.Flock(m.fd, syscall.LOCK_UN) })
}

// check returns the size of the file at path and whether path no longer
// names the file m maps (it was removed or replaced): one stat.
func (m *mapping) check(path string) (size int64, replaced bool) {
	fileSyscalls.Add(1)
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return 0, true
	}
	return st.Size, uint64(st.Dev) != m.dev || uint64(st.Ino) != m.ino
}

// closeFile closes the descriptor; the page is the store's to blank.
func (m *mapping) closeFile() error {
	fileSyscalls.Add(1)
	return syscall.Close(m.fd)
}

func closeFD(fd int) { syscall.Close(fd) }

// removeState unlinks the state file at path; one already gone is fine.
func removeState(path string) error {
	fileSyscalls.Add(1)
	err := syscall.Unlink(path)
	if err == nil || err == syscall.ENOENT {
		return nil
	}
	return &os.PathError{Op: "remove", Path: path, Err: err}
}

// sweepFile removes the state file at path if drop, shown its payload
// under the file lock, says so; removed runs before the lock is let go.
func sweepFile(path string, drop func(p *payload, st readStatus) bool, removed func()) error {
	fd, err := openExisting(path)
	if errors.Is(err, syscall.ENOENT) {
		return nil
	}
	if err != nil {
		return err
	}
	m := &mapping{fd: fd}
	defer m.closeFile()
	if err := m.lock(); err != nil {
		return err
	}
	defer m.unlock()
	if _, err := m.identify(); err != nil {
		return err
	}
	if _, replaced := m.check(path); replaced {
		return nil // removed or replaced meanwhile: the next sweep sees it
	}
	var w words
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), fileSize)
	fileSyscalls.Add(1)
	n, err := syscall.Pread(fd, buf, 0)
	if err != nil {
		return err
	}
	var p payload
	st := readFault
	if n == fileSize {
		st, _ = readHeld(&w, &p)
	}
	if !drop(&p, st) {
		return nil
	}
	if err := removeState(path); err != nil {
		return err
	}
	removed()
	return nil
}

// openGenerations maps the directory's generation page, creating it or
// extending it to genSize (filled with random counts) when needed.
func openGenerations(path string) (*genPage, error) {
	fileSyscalls.Add(1)
	fd, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CREAT|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state: open %s: %w", path, err)
	}
	defer syscall.Close(fd)
	m := &mapping{fd: fd}
	size, err := m.identify()
	if err == nil && size < genSize {
		err = extendGenerations(m)
	}
	if err != nil {
		return nil, fmt.Errorf("state: prepare %s: %w", path, err)
	}
	mem, err := syscall.Mmap(fd, 0, genSize, protRW, syscall.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("state: map %s: %w", path, err)
	}
	return &genPage{path: path, mem: mem, w: (*[genWords]uint64)(unsafe.Pointer(&mem[0]))}, nil
}

// extendGenerations brings a new or cut-short generation file to full
// size under its lock, every count drawn at random so that no process
// mistakes it for the counts it saw before the cut.
func extendGenerations(m *mapping) error {
	if err := m.lock(); err != nil {
		return err
	}
	defer m.unlock()
	size, err := m.identify()
	if err != nil || size >= genSize {
		return err
	}
	var w [genWords]uint64
	for i := range w {
		w[i] = rand.Uint64()
	}
	fileSyscalls.Add(1)
	_, err = syscall.Pwrite(m.fd, unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), genSize), 0)
	return err
}

// repair extends the generation file after someone cut it short.
func (g *genPage) repair() {
	fd, err := openExisting(g.path)
	if err != nil {
		return
	}
	defer syscall.Close(fd)
	extendGenerations(&mapping{fd: fd})
}

func (g *genPage) close() error { return syscall.Munmap(g.mem) }

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}
