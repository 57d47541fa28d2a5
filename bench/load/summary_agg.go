package main

import (
	"fmt"
	"io"
	"strings"
)

// closedAgg is one target's closed-loop figures over its rounds.
type closedAgg struct {
	rps, cpu, p50, p99, other0 []float64
}

// aggregateClosed groups the closed-loop runs by dialect and name.
func aggregateClosed(rs *results) (map[string]*closedAgg, []string) {
	by := map[string]*closedAgg{}
	var order []string
	for _, k := range sortedKeys(rs.closed) {
		r := rs.closed[k]
		key := r.Dialect + "/" + r.Name
		a := by[key]
		if a == nil {
			a = &closedAgg{}
			by[key] = a
			order = append(order, key)
		}
		a.rps = append(a.rps, r.RPS)
		a.cpu = append(a.cpu, r.CPUPerReqUS)
		a.p50 = append(a.p50, r.Latency.P50)
		a.p99 = append(a.p99, r.Latency.P99)
		if len(r.Cores) > 0 {
			a.other0 = append(a.other0, r.Cores[0].Foreign+r.Cores[0].Steal)
		}
	}
	return by, order
}

// printClosedAgg prints the medians over rounds, with ratios to the floor
// and to nginx of the same dialect.
func printClosedAgg(w io.Writer, rs *results) {
	by, order := aggregateClosed(rs)
	fmt.Fprintf(w, "\n== closed loop, 50 clients: median [range] over interleaved rounds ==\n")
	fmt.Fprintf(w, "%-28s %-22s %-24s %-20s %-10s %-10s %-10s %s\n", "dialect/target", "req/s", "CPU µs/req", "p99 µs", "CPU/floor", "CPU/nginx", "rps/floor", "other CPU0")
	for _, key := range order {
		a := by[key]
		dl, _, _ := strings.Cut(key, "/")
		rps, cpu, p99 := spreadOf(a.rps), spreadOf(a.cpu), spreadOf(a.p99)
		fl, ng := by[dl+"/floor"], by[dl+"/nginx"]
		cf, cn, rf := "–", "–", "–"
		if fl != nil && !strings.HasSuffix(key, "/direct") {
			cf, rf = ratio(cpu.Median, spreadOf(fl.cpu).Median), ratio(rps.Median, spreadOf(fl.rps).Median)
		}
		if ng != nil && !strings.HasSuffix(key, "/direct") {
			cn = ratio(cpu.Median, spreadOf(ng.cpu).Median)
		}
		fmt.Fprintf(w, "%-28s %-22s %-24s %-20s %-10s %-10s %-10s %.2f\n", key, fmtSpread(rps),
			fmt.Sprintf("%.1f [%.1f…%.1f]", cpu.Median, cpu.Min, cpu.Max), fmtSpread(p99), cf, cn, rf, spreadOf(a.other0).Median)
	}
}

// closedMedian returns the median req/s and CPU per request of a target.
func closedMedian(rs *results, dialect, name string) (rps, cpu float64, ok bool) {
	by, _ := aggregateClosed(rs)
	a := by[dialect+"/"+name]
	if a == nil {
		return 0, 0, false
	}
	return spreadOf(a.rps).Median, spreadOf(a.cpu).Median, true
}
