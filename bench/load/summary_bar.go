package main

import (
	"fmt"
	"io"
)

// printBar checks the run against the bar in PERFORMANCE.md.
func printBar(w io.Writer, rs *results) {
	fmt.Fprintf(w, "\n== against the bar ==\n")
	check := func(name string, ok bool, detail string) {
		mark := "MET    "
		if !ok {
			mark = "NOT MET"
		}
		fmt.Fprintf(w, "%s %-52s %s\n", mark, name, detail)
	}
	for _, k := range sortedKeys(rs.latency) {
		r := rs.latency[k]
		s, f := r.Proxies["sluice"], r.Proxies["floor"]
		if s == nil || f == nil {
			continue
		}
		check(k+": added p50 ≤ 1.2× floor", s.AddedP50.Median <= 1.2*f.AddedP50.Median,
			fmt.Sprintf("%.0f vs %.0f µs (%s)", s.AddedP50.Median, f.AddedP50.Median, ratio(s.AddedP50.Median, f.AddedP50.Median)))
		check(k+": added p99 ≤ 1.2× floor", s.AddedP99.Median <= 1.2*f.AddedP99.Median,
			fmt.Sprintf("%.0f vs %.0f µs (%s)", s.AddedP99.Median, f.AddedP99.Median, ratio(s.AddedP99.Median, f.AddedP99.Median)))
	}
	for _, d := range []string{"openai", "anthropic"} {
		_, s, ok1 := closedMedian(rs, d, "sluice")
		_, f, ok2 := closedMedian(rs, d, "floor")
		if !ok1 || !ok2 {
			continue
		}
		check("closed-"+d+": CPU per request ≤ 1.2× floor", s <= 1.2*f, fmt.Sprintf("%.1f vs %.1f µs (%s)", s, f, ratio(s, f)))
	}
	barSSE(check, rs)
	barHung(check, rs)
	barBreaker(check, rs)
}

func barSSE(check func(string, bool, string), rs *results) {
	for _, k := range sortedKeys(rs.sse) {
		r := rs.sse[k]
		t := r.Targets["sluice"]
		if t == nil {
			continue
		}
		if r.Streams == 1 {
			check(k+": added TTFB ≤ 100 µs", t.AddedTTFBP50.Median <= 100, fmt.Sprintf("%.0f µs", t.AddedTTFBP50.Median))
		}
		check(k+": zero lost, merged or extra events", t.Lost == 0 && t.Merged == 0 && t.Extra == 0 && t.Failed == 0,
			fmt.Sprintf("lost %d, merged %d, extra %d, failed streams %d of %d", t.Lost, t.Merged, t.Extra, t.Failed, t.Streams))
		if r.Streams > 1 {
			check(k+": CPU per SSE event ≤ 6 µs", t.CPUPerEvent <= 6, fmt.Sprintf("%.1f µs (floor %.1f, %s)",
				t.CPUPerEvent, cpuEv(r, "floor"), ratio(t.CPUPerEvent, cpuEv(r, "floor"))))
		}
	}
}

func cpuEv(r *sseResult, name string) float64 {
	if t := r.Targets[name]; t != nil {
		return t.CPUPerEvent
	}
	return 0
}

func barHung(check func(string, bool, string), rs *results) {
	if h := rs.hung["hung-sluice"]; h != nil {
		check("hung: ≤ 40 KiB per held call", h.KiBPerCall <= 40, fmt.Sprintf("%.1f KiB over %d calls", h.KiBPerCall, h.Reached))
		check("hung: 0 upstream left open 1 s after clients left", h.UpstreamAfter1 == 0,
			fmt.Sprintf("%d of %d still open after 1 s (%d after 3 s)", h.UpstreamAfter1, h.UpstreamHeld, h.UpstreamAfter3))
	}
	for _, k := range sortedKeys(rs.timeout) {
		t := rs.timeout[k]
		check(k+": fires within ±50 ms", t.WithinTol == t.Calls && t.Calls > 0,
			fmt.Sprintf("%d/%d, %+.1f…%+.1f ms", t.WithinTol, t.Calls, t.EarlyMS, t.LateMS))
	}
}

func barBreaker(check func(string, bool, string), rs *results) {
	b := rs.breaker["breaker-sluice"]
	if b == nil {
		return
	}
	if prps, _, ok := closedMedian(rs, "openai", "sluice"); ok {
		check("breaker open: fast-fail ≥ 3× proxied rate", b.RPS >= 3*prps, fmt.Sprintf("%.0f vs %.0f req/s (%s)", b.RPS, prps, ratio(b.RPS, prps)))
	}
	check("breaker open: p99 < 1 ms at 50 clients", b.Latency.P99 < 1000, fmt.Sprintf("%.0f µs", b.Latency.P99))
	check("breaker open: upstream untouched", b.UpstreamMoved == 0 && b.Unexpected == 0,
		fmt.Sprintf("%d upstream calls, %d answers not 503", b.UpstreamMoved, b.Unexpected))
}
