//go:build unix

package limit

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// processAlive reports whether the process of an entry holder runs: its
// pid exists (kill(pid, 0) does not answer ESRCH) and, where /proc tells,
// it is not a zombie (it ended and its parent has not reaped it yet) and
// it started when the entry says: a process given the pid again after the
// holder died does not keep the holder's slots.
func processAlive(h int64) bool {
	pid := holderPID(h)
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	state, tag := procStat(pid)
	if state == 'Z' || state == 'X' {
		return false
	}
	return tag == 0 || holderTag(h) == 0 || tag == holderTag(h)
}

// startTag returns a tag of when the process pid started, never 0; 0 when
// it cannot be known (no /proc).
func startTag(pid int) int64 {
	_, tag := procStat(pid)
	return tag
}

// procStat returns the state of the process pid and a tag of when it
// started, its start time in clock ticks since boot kept to tagBits bits
// and never 0, from /proc/<pid>/stat (fields 3 and 22); 0 and 0 when they
// cannot be read.
func procStat(pid int) (state byte, tag int64) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command name may hold anything
	if i < 0 {
		return 0, 0
	}
	fields := strings.Fields(s[i+1:]) // from field 3, the state
	if len(fields) < 20 || len(fields[0]) != 1 {
		return 0, 0
	}
	t, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return fields[0][0], 0
	}
	return fields[0][0], t%(1<<tagBits-1) + 1
}
