package report

import (
	"fmt"
	"slices"
	"time"
)

// The breaker timeline's geometry and colours.
const (
	breakerLeft  = 150.0
	breakerRow   = 34.0
	closedColor  = "#2ca02c"
	openColor    = "#d62728"
	halfOpenColr = "#ffb300"
)

// providers returns every provider named in s, sorted.
func providers(s *Summary) []string {
	var ps []string
	for _, l := range s.Latency {
		ps = append(ps, l.Provider)
	}
	for _, o := range s.Openings {
		ps = append(ps, o.Provider)
	}
	slices.Sort(ps)
	return slices.Compact(ps)
}

// breakerChart draws one row per provider over the report's window:
// closed as a thin green band, each opening as a red bar, and each half-open
// probe as an amber tick.
func breakerChart(s *Summary) chart {
	ps := providers(s)
	h := padTop + padBot + breakerRow*float64(max(len(ps), 1))
	c := chart{Title: "Breaker state timeline",
		Note: "per provider, as the attempts saw it when they started; red: open, amber mark above: half-open probe; openings are drawn at least 6 units wide; UTC",
		W:    chartW, H: h}
	f := newFrame(breakerLeft, h)
	span := s.To.Sub(s.From)
	x := func(t time.Time) float64 {
		if span <= 0 {
			return f.x0
		}
		r := float64(t.Sub(s.From)) / float64(span)
		return f.x0 + min(max(r, 0), 1)*f.w
	}
	row := map[string]float64{}
	for i, p := range ps {
		y := f.y0 + float64(i)*breakerRow
		row[p] = y
		c.Texts = append(c.Texts, label{f.x0 - 8, y + breakerRow/2 + 4, orDash(p), "end"})
		c.Rects = append(c.Rects, box{f.x0, y + breakerRow/2 - 3, f.w, 6, closedColor, orDash(p) + ": closed"})
	}
	for _, o := range s.Openings {
		y := row[o.Provider]
		end := o.End
		if o.Ongoing {
			end = s.To
		}
		x0 := x(o.Start)
		c.Rects = append(c.Rects, box{x0, y + 5, max(x(end)-x0, 6), breakerRow - 10, openColor,
			fmt.Sprintf("%s open %s–%s (%s): %d calls failed fast, after %s",
				orDash(o.Provider), stamp(o.Start), stamp(end), fmtMS(o.DurationMS), o.CallsFailedFast, why(o.Before))})
		for _, p := range o.Probes {
			c.Rects = append(c.Rects, box{x(p) - 1, y + 1, 2, 6, halfOpenColr,
				fmt.Sprintf("%s half-open probe at %s", orDash(o.Provider), stamp(p))})
		}
	}
	for k := range 6 {
		t := s.From.Add(span * time.Duration(k) / 5)
		c.Texts = append(c.Texts, label{x(t), f.y0 + f.h + 18, clock(t, span), "middle"})
	}
	c.Legend = []swatch{{closedColor, "closed"}, {openColor, "open"}, {halfOpenColr, "half-open probe"}}
	return c
}
