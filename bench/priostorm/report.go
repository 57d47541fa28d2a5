package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// result is one leg's figures.
type result struct {
	Name              string  `json:"name"`
	Sluice            string  `json:"sluice"`
	Label             string  `json:"label"` // what the binary was built from
	State             string  `json:"state"` // file or redis
	Priorities        bool    `json:"priorities"`
	ProviderRPM       int     `json:"provider_rpm"`
	Kind              string  `json:"kind"`           // the fake's rate limit: exact, quantized, none or overstate
	Burst             int     `json:"provider_burst"` // 0: a minute's worth
	BatchAgents       int     `json:"batch_agents"`
	InteractiveAgents int     `json:"interactive_agents"`
	EveryS            float64 `json:"interactive_every_s"`
	Seconds           float64 `json:"seconds"`

	Upstream429   int `json:"upstream_429"`   // the fake's 429s
	UpstreamCalls int `json:"upstream_calls"` // every call that reached the fake

	Interactive tally `json:"interactive"`
	Batch       tally `json:"batch"`

	// Capacity is what the provider's limit allowed over the run: its
	// bucket, full at the start, and its refill. BatchLeft is what it left
	// the batch calls: Capacity less the interactive calls served;
	// BatchShare the batch calls served over BatchLeft.
	Capacity   int     `json:"capacity"`
	BatchLeft  int     `json:"batch_left"`
	BatchShare float64 `json:"batch_share"`

	// QueuedMS is the attempt logs' queued_ms of the attempts sent
	// upstream, by the line's priority (0 included).
	QueuedMS map[string]ms `json:"queued_ms_by_priority"`

	Timeline []slice `json:"timeline"` // per 5 s

	Started string    `json:"started"`
	LoadAvg [2]string `json:"loadavg_start_end"`
}

// slice is one 5 s of the run.
type slice struct {
	EndS        int `json:"end_s"`
	Upstream    int `json:"upstream_calls"`
	Upstream429 int `json:"upstream_429"`
	Interactive int `json:"interactive_served"`
	Batch       int `json:"batch_served"`
}

const sliceLen = 5 * time.Second

// ms is a distribution in milliseconds.
type ms struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// finish works out the batch calls' share of what the limit left them.
func (r *result) finish(dur time.Duration) {
	start := r.ProviderRPM
	if r.Burst > 0 {
		start = r.Burst
	}
	r.Capacity = start + int(float64(r.ProviderRPM)*dur.Minutes())
	r.BatchLeft = r.Capacity - r.Interactive.Served
	if r.BatchLeft > 0 {
		r.BatchShare = float64(r.Batch.Served) / float64(r.BatchLeft)
	}
}

// readLogs reads the gateways' attempt logs: how long each attempt sent
// upstream waited for its slot, by priority.
func readLogs(res *result, paths []string) error {
	waits := map[string][]time.Duration{}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<22)
		for sc.Scan() {
			var l struct {
				Status   int     `json:"status"`
				QueuedMS float64 `json:"queued_ms"`
				Priority string  `json:"priority"`
				Refused  int     `json:"refused"`
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Refused > 0 || l.Status == 0 {
				continue // a line cut by the stop, a refusal, an attempt that reached nothing
			}
			waits[l.Priority] = append(waits[l.Priority], time.Duration(l.QueuedMS*1e6))
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	}
	res.QueuedMS = map[string]ms{}
	for p, w := range waits {
		res.QueuedMS[p] = dist(w)
	}
	return nil
}

func dist(ds []time.Duration) ms {
	if len(ds) == 0 {
		return ms{}
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	q := func(p float64) float64 {
		i := min(len(ds)-1, int(p*float64(len(ds))))
		return round1(ds[i])
	}
	return ms{N: len(ds), P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: round1(ds[len(ds)-1])}
}

func round1(d time.Duration) float64 { return float64(d.Round(100*time.Microsecond)) / 1e6 }

func printResult(w io.Writer, r *result) {
	how := "no priorities: every call interactive, first come first served (the baseline)"
	if r.Priorities {
		how = "batch agents send Sluice-Priority: batch"
	}
	fmt.Fprintf(w, "leg %s: %s (built from %s), state %s; %s\n", r.Name, r.Sluice, r.Label, r.State, how)
	fmt.Fprintf(w, "  %d batch agents in closed loops and %d interactive agents calling every %.0f s, over 2 gateways, for %.0f s; fake %s: bucket %d/min refilled continuously, burst %d (0: a minute's worth)\n",
		r.BatchAgents, r.InteractiveAgents, r.EveryS, r.Seconds, r.Kind, r.ProviderRPM, r.Burst)
	fmt.Fprintf(w, "  upstream: %d calls, %d answered 429 by the fake's limit\n", r.UpstreamCalls, r.Upstream429)
	for _, k := range []struct {
		name string
		t    tally
	}{{"interactive", r.Interactive}, {"batch", r.Batch}} {
		fmt.Fprintf(w, "  %-11s %d calls answered, %d served (200), other %v, %d cut at the end; latency at the client p50 %.1f ms, p95 %.1f ms, max %.1f ms\n",
			k.name, k.t.Calls, k.t.Served, k.t.Statuses, k.t.Cut, k.t.Latency.P50, k.t.Latency.P95, k.t.Latency.Max)
	}
	fmt.Fprintf(w, "  the limit allowed %d in the run; it left %d to batch calls, which were served %d: %.1f%%\n",
		r.Capacity, r.BatchLeft, r.Batch.Served, 100*r.BatchShare)
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.QueuedMS {
			if !yield(k) {
				return
			}
		}
	}) {
		d := r.QueuedMS[p]
		fmt.Fprintf(w, "  queued_ms in the logs, priority %q: %d attempts, p50 %.1f, p95 %.1f, p99 %.1f, max %.1f\n", p, d.N, d.P50, d.P95, d.P99, d.Max)
	}
	fmt.Fprintf(w, "  per 5 s       ")
	for _, s := range r.Timeline {
		fmt.Fprintf(w, " %5ds", s.EndS)
	}
	for _, row := range []struct {
		name string
		v    func(slice) int
	}{{"upstream     ", func(s slice) int { return s.Upstream }}, {"up 429       ", func(s slice) int { return s.Upstream429 }},
		{"interactive  ", func(s slice) int { return s.Interactive }}, {"batch        ", func(s slice) int { return s.Batch }}} {
		fmt.Fprintf(w, "\n  %s ", row.name)
		for _, s := range r.Timeline {
			fmt.Fprintf(w, " %6d", row.v(s))
		}
	}
	fmt.Fprintf(w, "\n  load average: %s at the start, %s at the end\n", r.LoadAvg[0], r.LoadAvg[1])
}
