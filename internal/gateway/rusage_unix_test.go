//go:build unix

package gateway

import (
	"syscall"
	"time"
)

// processCPU reads the process's CPU time, all its threads, as getrusage
// counts it (to the microsecond on Linux).
func processCPU() cpuMark {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return cpuMark{}
	}
	return cpuMark{user: time.Duration(ru.Utime.Nano()), sys: time.Duration(ru.Stime.Nano()), ok: true}
}
