package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clkTck is the kernel's USER_HZ, the unit of utime and stime in
// /proc/PID/stat; 100 on Linux.
const clkTck = 100

// cpuTime returns the user+system CPU time of the processes, summed.
func cpuTime(pids []int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, err
		}
		// The command name (field 2) may hold spaces: count from its ')'.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 13 {
			return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
		}
		ut, _ := strconv.ParseInt(f[11], 10, 64) // field 14
		st, _ := strconv.ParseInt(f[12], 10, 64) // field 15
		total += time.Duration(ut+st) * time.Second / clkTck
	}
	return total, nil
}

// rssKiB returns the resident set size of the processes, summed, in KiB.
func rssKiB(pids []int) (int64, error) {
	var total int64
	for _, pid := range pids {
		f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				total += n
			}
		}
		f.Close()
	}
	return total, nil
}

// establishedTo counts the TCP connections of the processes that are
// ESTABLISHED with remote port port (their upstream legs to the fake).
func establishedTo(pids []int, port int) (int, error) {
	inodes := map[string]bool{}
	for _, pid := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		ents, err := os.ReadDir(dir)
		if err != nil {
			return 0, err
		}
		for _, e := range ents {
			l, err := os.Readlink(filepath.Join(dir, e.Name()))
			if err != nil {
				continue
			}
			if in, ok := strings.CutPrefix(l, "socket:["); ok {
				inodes[strings.TrimSuffix(in, "]")] = true
			}
		}
	}
	n := 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		c, err := countTable(table, port, inodes)
		if err != nil {
			return 0, err
		}
		n += c
	}
	return n, nil
}

// countTable counts the lines of a /proc/net/tcp table in state
// ESTABLISHED (01) with the remote port and an inode in inodes.
func countTable(path string, port int, inodes map[string]bool) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, err
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "01" {
			continue
		}
		if strings.HasSuffix(f[2], want) && inodes[f[9]] {
			n++
		}
	}
	return n, sc.Err()
}

// cpuMeter measures the CPU spent by processes over an interval.
type cpuMeter struct {
	pids  []int
	cpu0  time.Duration
	wall0 time.Time
}

func startCPU(pids []int) (*cpuMeter, error) {
	c, err := cpuTime(pids)
	if err != nil {
		return nil, err
	}
	return &cpuMeter{pids: pids, cpu0: c, wall0: time.Now()}, nil
}

// cpuUse is CPU spent over an interval: seconds and the share of one core.
type cpuUse struct {
	Seconds float64 `json:"cpu_s"`
	Util    float64 `json:"cpu_util"` // CPU seconds per wall second
}

func (m *cpuMeter) stop() (cpuUse, error) {
	if m == nil {
		return cpuUse{}, nil
	}
	c, err := cpuTime(m.pids)
	if err != nil {
		return cpuUse{}, err
	}
	d := (c - m.cpu0).Seconds()
	wall := time.Since(m.wall0).Seconds()
	return cpuUse{Seconds: d, Util: float64(int(d/wall*1000)) / 1000}, nil
}

// meters measures the proxy and the client side (the fake and this
// process) together, and how busy each CPU was.
type meters struct {
	proxy, client *cpuMeter
	cores         []coreTicks
}

// coresSince returns each CPU's use since the meters started, given the
// share of it the proxy (CPU 0) and the client side (CPU 1) used.
func (m meters) coresSince(proxy, client cpuUse) []coreUse {
	return coreUses(m.cores, readCores(), []float64{proxy.Util, client.Util})
}

func startMeters(proxy, fake []int) (meters, error) {
	m := meters{cores: readCores()}
	var err error
	if len(proxy) > 0 {
		if m.proxy, err = startCPU(proxy); err != nil {
			return m, err
		}
	}
	m.client, err = startCPU(append([]int{os.Getpid()}, fake...))
	return m, err
}
