package report

import (
	"math"
	"slices"
)

// Percentile returns the p-th percentile (1 ≤ p ≤ 100) of sorted, an
// ascending slice, by the nearest-rank method: the value at rank
// ⌈p/100 · n⌉ (1-based), so that at least p % of the values are less than
// or equal to it. The result is always one of the values, never an
// interpolation. It returns 0 for an empty slice.
func Percentile(sorted []float64, p int) float64 {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	p = min(max(p, 1), 100)
	rank := (p*n + 99) / 100
	return sorted[rank-1]
}

// Dist is the count, nearest-rank percentiles and maximum of a set of
// milliseconds.
type Dist struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// distOf sorts vs in place and returns its distribution.
func distOf(vs []float64) Dist {
	if len(vs) == 0 {
		return Dist{}
	}
	slices.Sort(vs)
	return Dist{
		N:   len(vs),
		P50: Percentile(vs, 50),
		P95: Percentile(vs, 95),
		P99: Percentile(vs, 99),
		Max: vs[len(vs)-1],
	}
}

// addFinite returns a+b, held at ±MaxFloat64 so that sums of huge values
// stay encodable as JSON.
func addFinite(a, b float64) float64 {
	s := a + b
	switch {
	case math.IsInf(s, 1):
		return math.MaxFloat64
	case math.IsInf(s, -1):
		return -math.MaxFloat64
	}
	return s
}

// share returns n/total, 0 when total is 0.
func share(n, total int) float64 {
	if total == 0 {
		return 0
	}
	return float64(n) / float64(total)
}
