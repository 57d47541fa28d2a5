package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// coreTicks are one CPU's counters from /proc/stat, in USER_HZ ticks.
type coreTicks struct {
	busy, steal, total int64
}

// readCores returns the counters of cpu0, cpu1, … from /proc/stat.
func readCores() []coreTicks {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []coreTicks
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) < 9 || !strings.HasPrefix(fs[0], "cpu") || fs[0] == "cpu" {
			continue
		}
		var v [8]int64
		for i := range v {
			v[i], _ = strconv.ParseInt(fs[i+1], 10, 64)
		}
		// user nice system idle iowait irq softirq steal
		c := coreTicks{busy: v[0] + v[1] + v[2] + v[5] + v[6], steal: v[7]}
		c.total = c.busy + v[3] + v[4] + c.steal
		out = append(out, c)
	}
	return out
}

// coreUse is how busy one CPU was over an interval, as shares of it.
type coreUse struct {
	CPU     int     `json:"cpu"`
	Busy    float64 `json:"busy"`    // every process, ours included
	Steal   float64 `json:"steal"`   // taken by the hypervisor
	Foreign float64 `json:"foreign"` // busy less what our processes on it spent
}

// coreUses compares two readings; ours gives the CPU our processes
// pinned there used, per CPU, as shares of the interval.
func coreUses(a, b []coreTicks, ours []float64) []coreUse {
	var out []coreUse
	for i := range min(len(a), len(b)) {
		d := float64(b[i].total - a[i].total)
		if d <= 0 {
			continue
		}
		u := coreUse{CPU: i, Busy: r3(float64(b[i].busy-a[i].busy) / d), Steal: r3(float64(b[i].steal-a[i].steal) / d)}
		if i < len(ours) {
			u.Foreign = r3(max(0, u.Busy-ours[i]))
		}
		out = append(out, u)
	}
	return out
}

func r3(f float64) float64 { return float64(int(f*1000+0.5)) / 1000 }
