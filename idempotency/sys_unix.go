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

// diskSize is the space a file takes on disk: its allocated blocks, or its
// length if that is more (a file system that reports no blocks).
func diskSize(info os.FileInfo) int64 {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return max(info.Size(), int64(st.Blocks)*512)
	}
	return info.Size()
}
