package report

import (
	"testing"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		vs   []float64
		p    int
		want float64
	}{
		{nil, 95, 0},
		{[]float64{7}, 1, 7},
		{[]float64{7}, 100, 7},
		// The nearest-rank examples: 15, 20, 35, 40, 50.
		{[]float64{15, 20, 35, 40, 50}, 5, 15},
		{[]float64{15, 20, 35, 40, 50}, 30, 20},
		{[]float64{15, 20, 35, 40, 50}, 40, 20},
		{[]float64{15, 20, 35, 40, 50}, 50, 35},
		{[]float64{15, 20, 35, 40, 50}, 100, 50},
		{[]float64{3, 6, 7, 8, 8, 10, 13, 15, 16, 20}, 25, 7},
		{[]float64{3, 6, 7, 8, 8, 10, 13, 15, 16, 20}, 50, 8},
		{[]float64{3, 6, 7, 8, 8, 10, 13, 15, 16, 20}, 75, 15},
		// 95 % of 20 is exactly rank 19; of 21 it is 19.95, so rank 20.
		{seq(20), 95, 19},
		{seq(21), 95, 20},
		{seq(100), 99, 99},
		{seq(1000), 99, 990},
	}
	for _, tc := range tests {
		if got := Percentile(tc.vs, tc.p); got != tc.want {
			t.Errorf("Percentile(%d values, %d) = %v, want %v", len(tc.vs), tc.p, got, tc.want)
		}
	}
}

// seq returns 1, 2, … n.
func seq(n int) []float64 {
	vs := make([]float64, n)
	for i := range vs {
		vs[i] = float64(i + 1)
	}
	return vs
}
