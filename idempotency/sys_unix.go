//go:build unix

package idempotency

import (
	"os"
	"syscall"
)

const fileStoreSupported = true

// flock takes (or, with !on, lets go of) the exclusive flock of f.
func flock(f *os.File, on bool) error {
	how := syscall.LOCK_UN
	if on {
		how = syscall.LOCK_EX
	}
	for {
		if err := syscall.Flock(int(f.Fd()), how); err != syscall.EINTR {
			return err
		}
	}
}
