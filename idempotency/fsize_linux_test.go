package idempotency_test

import "syscall"

// setFileSizeLimit lets this process write no file past n bytes
// (RLIMIT_FSIZE): its writes past them fail, as on a full disk.
func setFileSizeLimit(n uint64) error {
	return syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: n, Max: n})
}
