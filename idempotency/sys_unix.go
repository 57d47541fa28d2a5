//go:build unix

package idempotency

import (
	"os"
	"runtime"
	"syscall"
)

const fileStoreSupported = true

// windowSupported says whether Keep writes through a mapped window on the
// log (logwindow.go): not on OpenBSD, whose mappings and read calls do
// not share one page cache, so that a record written in a mapping might
// not yet be what another process reads.
const windowSupported = runtime.GOOS != "openbsd"

// flock takes (or, with !on, lets go of) the exclusive flock of the open
// file fd.
func flock(fd int, on bool) error {
	how := syscall.LOCK_UN
	if on {
		how = syscall.LOCK_EX
	}
	for {
		if err := syscall.Flock(fd, how); err != syscall.EINTR {
			return err
		}
	}
}

// mmap maps the first n bytes of f, shared, for reading and writing.
func mmap(f *os.File, n int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

// mmapAt maps the n bytes of f from off, a multiple of the page size,
// shared, for reading and writing.
func mmapAt(f *os.File, off int64, n int) ([]byte, error) {
	return syscall.Mmap(int(f.Fd()), off, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
}

func munmap(b []byte) error { return syscall.Munmap(b) }
