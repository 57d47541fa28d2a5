//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package breaker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"
)

const fileStoreSupported = true

// mapping is one open state file and its shared memory map.
type mapping struct {
	fd       int
	mem      []byte
	w        *words
	dev, ino uint64
}

// openMapping opens the state file at path, creating it (complete, in one
// step) when missing, and maps it. grew reports a file found shorter than
// a state file, which it extends with zeros under the file lock.
func openMapping(path string, init payload) (m *mapping, grew bool, err error) {
	fileSyscalls.Add(1)
	fd, err := openExisting(path)
	if errors.Is(err, syscall.ENOENT) {
		if err = createFile(path, &init); err == nil {
			fd, err = openExisting(path)
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("breaker: open state file: %w", err)
	}
	m = &mapping{fd: fd}
	if err = m.mmap(); err == nil {
		grew, err = m.ensureSize()
	}
	if err != nil {
		if m.mem != nil {
			syscall.Munmap(m.mem)
		}
		syscall.Close(fd)
		return nil, false, fmt.Errorf("breaker: open state file %s: %w", path, err)
	}
	return m, grew, nil
}

func openExisting(path string) (int, error) {
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
// the race to another creator is fine.
func createFile(path string, p *payload) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
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
		return err
	}
	if err = os.Link(tmp.Name(), path); errors.Is(err, os.ErrExist) {
		return nil
	}
	return err
}

// ensureSize extends a short file to fileSize, and clears it, under the
// file lock.
func (m *mapping) ensureSize() (grew bool, err error) {
	var st syscall.Stat_t
	if err = syscall.Fstat(m.fd, &st); err != nil {
		return false, err
	}
	m.dev, m.ino = uint64(st.Dev), uint64(st.Ino)
	if st.Size >= fileSize {
		return false, nil
	}
	if err = m.lock(); err != nil {
		return false, err
	}
	defer m.unlock()
	if err = syscall.Fstat(m.fd, &st); err != nil || st.Size >= fileSize {
		return false, err
	}
	return true, m.grow()
}

// grow extends the file to fileSize and clears it, so that what was left
// of it reads as a closed breaker; the caller holds the file lock and saw
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

func (m *mapping) mmap() error {
	mem, err := syscall.Mmap(m.fd, 0, fileSize, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		return err
	}
	m.mem = mem
	m.w = (*words)(unsafe.Pointer(&mem[0]))
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

func (m *mapping) close() error {
	err := syscall.Munmap(m.mem)
	if cerr := syscall.Close(m.fd); err == nil {
		err = cerr
	}
	return err
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != syscall.EINTR {
			return err
		}
	}
}
