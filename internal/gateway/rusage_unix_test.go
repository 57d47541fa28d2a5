//go:build unix

package gateway

import (
	"syscall"
	"time"
)

// rusageCPU is the CPU time the process has used, all its threads, user
// and system, as getrusage counts it (to the microsecond on Linux).
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
