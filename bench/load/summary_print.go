package main

import (
	"fmt"
	"io"
	"strings"
)

// printLogcost averages the attempt-log variants over their rounds.
func printLogcost(w io.Writer, rs *results) {
	printVariants(w, rs, "sluice-log-", "attempt log cost", "off")
}

// printBudgetcost averages the runs without and with a spend cap over
// their rounds.
func printBudgetcost(w io.Writer, rs *results) {
	printVariants(w, rs, "sluice-budget-", "budget cost", "off")
}

// printVariants averages, over their rounds, the closed-loop runs of
// Sluice named prefix+variant, and sets each beside the base variant.
func printVariants(w io.Writer, rs *results, prefix, title, base string) {
	type acc struct {
		rps, cpu []float64
	}
	by := map[string]*acc{}
	var order []string
	for _, k := range sortedKeys(rs.closed) {
		r := rs.closed[k]
		v, ok := strings.CutPrefix(r.Name, prefix)
		if !ok {
			continue
		}
		if by[v] == nil {
			by[v] = &acc{}
			order = append(order, v)
		}
		by[v].rps = append(by[v].rps, r.RPS)
		by[v].cpu = append(by[v].cpu, r.CPUPerReqUS)
	}
	if len(order) == 0 {
		return
	}
	fmt.Fprintf(w, "\n== %s (Sluice, closed loop 50 clients; median [range] over rounds) ==\n", title)
	b := by[base]
	for _, v := range order {
		a := by[v]
		cpu := spreadOf(a.cpu)
		extra := "–"
		if b != nil {
			bm := spreadOf(b.cpu).Median
			extra = fmt.Sprintf("%+.1f µs/req vs %s (%s)", cpu.Median-bm, base, ratio(cpu.Median, bm))
		}
		fmt.Fprintf(w, "%-8s req/s %-22s CPU µs/req %-20s %s\n", v, fmtSpread(spreadOf(a.rps)),
			fmt.Sprintf("%.1f [%.1f…%.1f]", cpu.Median, cpu.Min, cpu.Max), extra)
	}
}

var proxyOrder = []string{"floor", "nginx", "sluice"}

func printLatency(w io.Writer, rs *results) {
	for _, k := range sortedKeys(rs.latency) {
		r := rs.latency[k]
		fmt.Fprintf(w, "\n== %s: added latency at 1 client, %s, %d rounds × %d calls per leg (µs, median [min…max]) ==\n", k, r.Dialect, r.Rounds, r.N)
		fmt.Fprintf(w, "%-8s %-26s %-26s %-12s %-12s %s\n", "proxy", "added p50", "added p99", "p50/floor", "p99/floor", "p50/nginx")
		fl, ng := r.Proxies["floor"], r.Proxies["nginx"]
		for _, n := range proxyOrder {
			p := r.Proxies[n]
			if p == nil {
				continue
			}
			fmt.Fprintf(w, "%-8s %-26s %-26s %-12s %-12s %s\n", n, fmtSpread(p.AddedP50), fmtSpread(p.AddedP99),
				ratioOf(p, fl, false), ratioOf(p, fl, true), ratioOf(p, ng, false))
		}
	}
}

func ratioOf(p, base *latencyProxy, p99 bool) string {
	if base == nil {
		return "–"
	}
	if p99 {
		return ratio(p.AddedP99.Median, base.AddedP99.Median)
	}
	return ratio(p.AddedP50.Median, base.AddedP50.Median)
}

// other formats the share of CPU 0 and CPU 1 that processes not ours
// (and the hypervisor) took.
func other(cs []coreUse) string {
	if len(cs) < 2 {
		return "–"
	}
	return fmt.Sprintf("%.2f/%.2f", cs[0].Foreign+cs[0].Steal, cs[1].Foreign+cs[1].Steal)
}

func fmtSpread(s spread) string {
	return fmt.Sprintf("%.0f [%.0f…%.0f]", s.Median, s.Min, s.Max)
}

func printClosed(w io.Writer, rs *results) {
	fmt.Fprintf(w, "\n== closed loop (and attempt-log variants) ==\n")
	fmt.Fprintf(w, "(proxy CPU: share of CPU 0 the proxy used; client CPU: share of CPU 1 the fake and load client used; other: share of CPU 0 / CPU 1 used by processes not ours, steal included)\n")
	fmt.Fprintf(w, "%-38s %7s %8s %8s %8s %10s %9s %10s %11s %5s %9s\n", "run", "req/s", "p50 µs", "p99 µs", "max µs", "CPU µs/req", "proxy CPU", "client CPU", "other 0/1", "bad", "CPU/floor")
	for _, k := range sortedKeys(rs.closed) {
		r := rs.closed[k]
		_, fcpu, ok := closedMedian(rs, r.Dialect, "floor")
		fr := "–"
		if ok && r.Name != "direct" {
			fr = ratio(r.CPUPerReqUS, fcpu)
		}
		fmt.Fprintf(w, "%-38s %7.0f %8.0f %8.0f %8.0f %10.1f %9.2f %10.2f %11s %5d %9s\n", k, r.RPS, r.Latency.P50, r.Latency.P99,
			r.Latency.Max, r.CPUPerReqUS, r.Proxy.Util, r.ClientSide.Util, other(r.Cores), r.Unexpected, fr)
	}
}

func printOpen(w io.Writer, rs *results) {
	fmt.Fprintf(w, "\n== open loop (fixed rate; latency from the due time) ==\n")
	fmt.Fprintf(w, "(p50/p99 from the due time; svc p99 from the actual send; late p99: how late the load client itself sent)\n")
	fmt.Fprintf(w, "%-26s %6s %9s %9s %9s %9s %9s %7s %10s %9s %10s %11s\n", "run", "rate", "achieved", "p50 µs", "p99 µs", "svc p99", "late p99", "errors", "CPU µs/req", "proxy CPU", "client CPU", "other 0/1")
	for _, k := range sortedKeys(rs.open) {
		for _, x := range rs.open[k].Rates {
			fmt.Fprintf(w, "%-26s %6d %9.0f %9.0f %9.0f %9.0f %9.0f %7d %10.1f %9.2f %10.2f %11s\n", k, x.Rate, x.Achieved, x.Latency.P50,
				x.Latency.P99, x.Service.P99, x.Late.P99, x.Errors+x.Dropped, x.CPUPerReqUS, x.Proxy.Util, x.ClientSide.Util, other(x.Cores))
		}
	}
}

func printSSE(w io.Writer, rs *results) {
	for _, k := range sortedKeys(rs.sse) {
		r := rs.sse[k]
		fmt.Fprintf(w, "\n== %s: %q, %d concurrent × %d per leg, %d waves, %d events expected per stream ==\n",
			k, r.Script, r.Streams, r.PerLeg, r.Waves, r.Expected)
		fmt.Fprintf(w, "%-8s %8s %10s %10s %-24s %7s %6s %6s %6s %6s %10s\n", "target", "streams", "ttfb p50", "ttfb p99", "added ttfb p50 µs", "events", "lost", "merged", "extra", "failed", "CPU µs/ev")
		for _, n := range append([]string{"direct"}, proxyOrder...) {
			t := r.Targets[n]
			if t == nil {
				continue
			}
			fmt.Fprintf(w, "%-8s %8d %10.0f %10.0f %-24s %7d %6d %6d %6d %6d %10.1f\n", n, t.Streams, t.TTFB.P50, t.TTFB.P99,
				fmtSpread(t.AddedTTFBP50), t.Events, t.Lost, t.Merged, t.Extra, t.Failed, t.CPUPerEvent)
		}
	}
}

func printHung(w io.Writer, rs *results) {
	fmt.Fprintf(w, "\n== hung upstream ==\n")
	fmt.Fprintf(w, "%-14s %6s %8s %10s %8s %10s %10s\n", "run", "held", "KiB/call", "upstream", "after 1s", "after 3s", "cl errors")
	for _, k := range sortedKeys(rs.hung) {
		r := rs.hung[k]
		fmt.Fprintf(w, "%-14s %6d %8.1f %10d %8d %10d %10d\n", k, r.Reached, r.KiBPerCall, r.UpstreamHeld, r.UpstreamAfter1, r.UpstreamAfter3, r.ClientErrors)
	}
}

func printTimeouts(w io.Writer, rs *results) {
	fmt.Fprintf(w, "\n== timeouts (Sluice) ==\n")
	for _, k := range sortedKeys(rs.timeout) {
		r := rs.timeout[k]
		fmt.Fprintf(w, "%-20s want %6.0f ms: fired p50 %7.1f ms, range %+.1f…%+.1f ms, %d/%d within ±%.0f ms, statuses %v\n",
			k, r.WantMS, r.Fired.P50/1e3, r.EarlyMS, r.LateMS, r.WithinTol, r.Calls, r.ToleranceMS, r.Statuses)
	}
}

func printBreaker(w io.Writer, rs *results) {
	fmt.Fprintf(w, "\n== breaker open, fast fail ==\n")
	for _, k := range sortedKeys(rs.breaker) {
		r := rs.breaker[k]
		prps, _, ok := closedMedian(rs, "openai", "sluice")
		rr := "–"
		if ok {
			rr = ratio(r.RPS, prps)
		}
		fmt.Fprintf(w, "%-14s %8.0f req/s (%s the proxied rate), p50 %.0f µs, p99 %.0f µs, CPU %.1f µs/req, proxy CPU %.2f, client CPU %.2f, bad %d; upstream calls during run: %d (opened by %d, then %d provider_down=%v)\n",
			k, r.RPS, rr, r.Latency.P50, r.Latency.P99, r.CPUPerReqUS, r.Proxy.Util, r.ClientSide.Util, r.Unexpected, r.UpstreamMoved, r.OpenedBy, r.OpenAnswer, r.ProviderDown)
	}
}
