package main

import (
	"math"
	"slices"
	"time"
)

// dist summarises durations, in microseconds.
type dist struct {
	N    int     `json:"n"`
	Min  float64 `json:"min_us"`
	P50  float64 `json:"p50_us"`
	P90  float64 `json:"p90_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
	Max  float64 `json:"max_us"`
	Mean float64 `json:"mean_us"`
}

// summarize returns the distribution of ds; it sorts ds.
func summarize(ds []time.Duration) dist {
	if len(ds) == 0 {
		return dist{}
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return dist{
		N: len(ds), Min: us(ds[0]), Max: us(ds[len(ds)-1]),
		P50: us(quantile(ds, 0.50)), P90: us(quantile(ds, 0.90)),
		P99: us(quantile(ds, 0.99)), P999: us(quantile(ds, 0.999)),
		Mean: round1(float64(sum) / float64(len(ds)) / 1e3),
	}
}

// quantile returns the q-quantile of sorted ds (nearest rank).
func quantile(ds []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func us(d time.Duration) float64 { return round1(float64(d) / 1e3) }

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// spread is the median and range of a figure measured over rounds.
type spread struct {
	Median float64   `json:"median"`
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Rounds []float64 `json:"rounds"`
}

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	m := s[len(s)/2]
	if len(s)%2 == 0 {
		m = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{Median: round1(m), Min: s[0], Max: s[len(s)-1], Rounds: xs}
}
