package report

import (
	"cmp"
	"slices"
)

// RateLimited is the attempts answered 429, by minute of the hour (UTC).
// Cron jobs started at :00 show as a tall bucket 0.
type RateLimited struct {
	Total int `json:"total"`
	// ByMinute[m] is the number of 429s at minute m of any hour.
	ByMinute [60]int `json:"by_minute"`
	// Top are the busiest minutes, at most five, most first.
	Top []MinuteCount `json:"top"`
}

// MinuteCount is the 429s at one minute of the hour and their share of all
// 429s (0 to 1).
type MinuteCount struct {
	Minute int     `json:"minute"`
	N      int     `json:"n"`
	Share  float64 `json:"share"`
}

// topMinutes is how many minutes RateLimited.Top names.
const topMinutes = 5

// rateLimited counts 429s by minute of the hour.
func rateLimited(lines []Line) RateLimited {
	var r RateLimited
	for _, l := range lines {
		if l.Status == 429 {
			r.Total++
			r.ByMinute[l.TS.UTC().Minute()]++
		}
	}
	for m, n := range r.ByMinute {
		if n > 0 {
			r.Top = append(r.Top, MinuteCount{Minute: m, N: n, Share: share(n, r.Total)})
		}
	}
	slices.SortFunc(r.Top, func(a, b MinuteCount) int {
		return cmp.Or(cmp.Compare(b.N, a.N), cmp.Compare(a.Minute, b.Minute))
	})
	r.Top = r.Top[:min(len(r.Top), topMinutes)]
	return r
}
