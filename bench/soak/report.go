package main

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// dist summarizes latencies, in milliseconds.
type dist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99_9"`
	Max  float64 `json:"max"`
}

func summarize(ds []time.Duration) dist {
	if len(ds) == 0 {
		return dist{}
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	q := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(s)))) - 1
		return ms(s[min(max(i, 0), len(s)-1)])
	}
	return dist{N: len(s), P50: q(0.5), P90: q(0.9), P99: q(0.99), P999: q(0.999), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return round(float64(d)/1e6, 1) }

func round(f float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(f*p) / p
}

func itoa(n int) string { return strconv.Itoa(n) }

// printSummary writes the result for a reader.
func printSummary(w io.Writer, r *result) {
	s := r.Settings
	fmt.Fprintf(w, "soak at %s: %s at %g calls/s, %.0f%% streams, fake %q, %s\n",
		r.Commit, s.Duration, s.Rate, 100*s.Streams, s.Mix, s.Timeouts)
	fmt.Fprintf(w, "load average %s → %s\n\n", r.LoadStart, r.LoadEnd)
	fmt.Fprintf(w, "calls %d (skipped %d)\n", r.Calls, r.Skipped)
	fmt.Fprintf(w, "  calls past total + 1 s          %6d   must be 0\n", r.Late)
	fmt.Fprintf(w, "  empty replies (no status)       %6d   must be 0\n", r.Empty)
	fmt.Fprintf(w, "  streams cut, no end, no error   %6d   must be 0\n", r.Truncated)
	fmt.Fprintf(w, "  streams whole / with error event %5d / %d; JSON 200 bodies cut %d\n",
		r.StreamsWhole, r.StreamsError, r.JSONBodyCut)
	for _, k := range []string{"json", "stream"} {
		fmt.Fprintf(w, "  status %-6s %s\n", k, counts(r.Status[k]))
	}
	for _, k := range []string{"all", "json", "stream"} {
		d := r.Latency[k]
		fmt.Fprintf(w, "  latency %-6s ms p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f (n %d)\n",
			k, d.P50, d.P90, d.P99, d.P999, d.Max, d.N)
	}
	l := r.Log
	fmt.Fprintf(w, "\nattempt log: %d lines (%d bytes, %.2f per call), %d of sent attempts; upstream attempts %d for %d calls\n",
		l.Lines, l.Bytes, perCall(l.Lines, r.Calls), l.SentLines, l.UpstreamCalls, l.Calls)
	fmt.Fprintf(w, "  retry lines %d, actual retries %d, retry lines without a next attempt %d\n",
		l.RetryLines, l.ActualRetries, l.RetryNoNext)
	fmt.Fprintf(w, "  upstream attempts without a line %d, sent lines without an upstream attempt %d, unparsed %d\n",
		l.Unlogged, l.Phantom, l.Unparsed)
	fmt.Fprintf(w, "  outcomes %s\n  statuses %s\n  fake played %s\n", counts(l.Outcomes), counts(l.Statuses), counts(l.FakePlayed))
	for _, step := range slices.Sorted(maps.Keys(l.ByStep)) {
		fmt.Fprintf(w, "    fake %-7s → log %s\n", step, counts(l.ByStep[step]))
	}
	g := r.Gateway
	fmt.Fprintf(w, "\ngateway      RSS KiB  fds  goroutines  conns up/clients\n")
	for _, x := range []struct {
		name string
		r    reading
	}{{"start", g.Start}, {"peak", g.Peak}, {"end", g.End}} {
		fmt.Fprintf(w, "  %-9s %8d %4d %11d  %5d / %d\n", x.name, x.r.RSSKiB, x.r.FDs, x.r.Goroutines, x.r.Upstream, x.r.Clients)
	}
	fmt.Fprintf(w, "  stderr %d lines (%d bytes); SIGTERM to exit %.2f s, clean %v\n",
		g.StderrLines, g.StderrBytes, g.StopS, g.CleanExit)
	if len(r.Failures) == 0 {
		fmt.Fprintln(w, "\nPASS: every must-be-0 figure is 0 and the log matches the upstream attempts")
		return
	}
	fmt.Fprintln(w, "\nFAIL:")
	for _, f := range r.Failures {
		fmt.Fprintln(w, "  "+f)
	}
}

func perCall(n, calls int) float64 {
	if calls == 0 {
		return 0
	}
	return float64(n) / float64(calls)
}

// counts writes a map as "k=v k=v", keys sorted.
func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+strconv.Itoa(m[k]))
	}
	return strings.Join(parts, " ")
}
