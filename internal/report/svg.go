package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// chart is one SVG chart as shapes in its own coordinates; the page
// template draws it.
type chart struct {
	Title, Note string
	W, H        float64
	Lines       []seg
	Rects       []box
	Paths       []polyline
	Dots        []dot
	Texts       []label
	Legend      []swatch
}

type seg struct {
	X1, Y1, X2, Y2 float64
	Stroke         string
}

type box struct {
	X, Y, W, H float64
	Fill, Tip  string
}

type polyline struct{ Points, Stroke string }

type dot struct {
	X, Y      float64
	Fill, Tip string
}

type label struct {
	X, Y   float64
	Text   string
	Anchor string
}

type swatch struct{ Color, Name string }

// The size and margins of a chart, in SVG units.
const (
	chartW   = 1000.0
	chartH   = 260.0
	padLeft  = 64.0
	padRight = 16.0
	padTop   = 26.0
	padBot   = 34.0
	axisGrey = "#c8c8c8"
)

// frame is the plotting area of a chart; y0 is its top.
type frame struct{ x0, y0, w, h float64 }

func newFrame(left, height float64) frame {
	return frame{x0: left, y0: padTop, w: chartW - left - padRight, h: height - padTop - padBot}
}

// y maps v in 0..top to a vertical position, clamped to the frame.
func (f frame) y(v, top float64) float64 {
	r := v / top
	if math.IsNaN(r) {
		r = 0
	}
	return f.y0 + f.h - min(max(r, 0), 1)*f.h
}

// niceMax rounds v up to 1, 2, 4, 5 or 8 times a power of ten; 1 for nothing.
func niceMax(v float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 4, 5, 8, 10} {
		if n := m * e; n >= v && !math.IsInf(n, 0) {
			return n
		}
	}
	return v
}

// num formats a value for an axis label or a tooltip.
func num(v float64) string {
	if math.Abs(v) >= 1e6 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// yAxis draws horizontal grid lines and labels from 0 to top.
func (c *chart) yAxis(f frame, top float64, unit string) {
	for i := range 5 {
		v := top * float64(i) / 4
		y := f.y(v, top)
		c.Lines = append(c.Lines, seg{f.x0, y, f.x0 + f.w, y, axisGrey})
		c.Texts = append(c.Texts, label{f.x0 - 6, y + 4, num(v), "end"})
	}
	c.Texts = append(c.Texts, label{f.x0 - 6, f.y0 - 14, unit, "end"})
}

// stepName names a bucket width: "5-minute", "2-hour", "1-day".
func stepName(d time.Duration) string {
	switch {
	case d >= 24*time.Hour && d%(24*time.Hour) == 0:
		return fmt.Sprintf("%d-day", d/(24*time.Hour))
	case d >= time.Hour && d%time.Hour == 0:
		return fmt.Sprintf("%d-hour", d/time.Hour)
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d-minute", d/time.Minute)
	}
	return d.String()
}

// clock formats a bucket time for an axis, with the date when the span
// crosses days.
func clock(t time.Time, span time.Duration) string {
	if span >= 24*time.Hour {
		return t.UTC().Format("01-02 15:04")
	}
	return t.UTC().Format("15:04")
}

// timeAxis labels about six buckets of tl along the bottom of f.
func (c *chart) timeAxis(f frame, tl Timeline) {
	n := len(tl.Buckets)
	span := time.Duration(tl.StepSeconds*float64(time.Second)) * time.Duration(n)
	bw := f.w / float64(n)
	for k := range 6 {
		i := k * (n - 1) / 5
		if k > 0 && i == (k-1)*(n-1)/5 {
			continue
		}
		x := f.x0 + (float64(i)+0.5)*bw
		c.Texts = append(c.Texts, label{x, f.y0 + f.h + 18, clock(tl.Buckets[i].Start, span), "middle"})
	}
}

// latencyChart draws p50 and p95 latency per bucket as two lines.
func latencyChart(tl Timeline) chart {
	step := time.Duration(tl.StepSeconds * float64(time.Second))
	c := chart{Title: "Latency over time",
		Note: fmt.Sprintf("p50 and p95 of latency_ms per %s bucket, nearest rank; attempts that went upstream; UTC", stepName(step)),
		W:    chartW, H: chartH}
	f := newFrame(padLeft, chartH)
	peak := 0.0
	for _, b := range tl.Buckets {
		peak = max(peak, b.Latency.P95)
	}
	top := niceMax(peak)
	c.yAxis(f, top, "ms")
	c.timeAxis(f, tl)
	bw := f.w / float64(len(tl.Buckets))
	series := []struct {
		name, color string
		val         func(Dist) float64
	}{
		{"p50", "#1f77b4", func(d Dist) float64 { return d.P50 }},
		{"p95", "#d62728", func(d Dist) float64 { return d.P95 }},
	}
	for _, s := range series {
		var pts []string
		flush := func() {
			if len(pts) > 1 {
				c.Paths = append(c.Paths, polyline{strings.Join(pts, " "), s.color})
			}
			pts = nil
		}
		for i, b := range tl.Buckets {
			if b.Latency.N == 0 {
				flush()
				continue
			}
			x, y := f.x0+(float64(i)+0.5)*bw, f.y(s.val(b.Latency), top)
			pts = append(pts, num(x)+","+num(y))
			c.Dots = append(c.Dots, dot{x, y, s.color, fmt.Sprintf("%s %s %s ms (n=%d)",
				clock(b.Start, 0), s.name, num(s.val(b.Latency)), b.Latency.N)})
		}
		flush()
		c.Legend = append(c.Legend, swatch{s.color, s.name})
	}
	return c
}

// outcomeOrder and outcomeColors fix the stacking order and colour of each
// outcome; others come last in grey-blue.
var (
	outcomeOrder  = []string{"ok", "retry", "fail", "timeout", "stream_stalled", "circuit_open", "budget_exhausted", "client_cancel"}
	outcomeColors = map[string]string{
		"ok": "#2ca02c", "retry": "#ff7f0e", "fail": "#d62728", "timeout": "#9467bd",
		"stream_stalled": "#e377c2", "circuit_open": "#444444", "budget_exhausted": "#8c564b",
		"client_cancel": "#a0a0a0",
	}
	otherColor = "#17becf"
)

// outcomeKeys returns the outcomes present in tl, in stacking order.
func outcomeKeys(tl Timeline) []string {
	seen := map[string]bool{}
	for _, b := range tl.Buckets {
		for k := range b.Outcomes {
			seen[k] = true
		}
	}
	var keys []string
	for _, k := range outcomeOrder {
		if seen[k] {
			keys = append(keys, k)
			delete(seen, k)
		}
	}
	var others []string
	for k := range seen {
		others = append(others, k)
	}
	slices.Sort(others)
	return append(keys, others...)
}

// colorOf returns the colour of an outcome.
func colorOf(outcome string) string {
	if c, ok := outcomeColors[outcome]; ok {
		return c
	}
	return otherColor
}

// outcomesChart draws the attempts per bucket as bars stacked by outcome.
func outcomesChart(tl Timeline) chart {
	step := time.Duration(tl.StepSeconds * float64(time.Second))
	c := chart{Title: "Outcomes over time",
		Note: fmt.Sprintf("attempts per %s bucket, stacked by outcome; UTC", stepName(step)),
		W:    chartW, H: chartH}
	f := newFrame(padLeft, chartH)
	peak := 0
	for _, b := range tl.Buckets {
		peak = max(peak, b.Attempts)
	}
	top := niceMax(float64(peak))
	c.yAxis(f, top, "attempts")
	c.timeAxis(f, tl)
	keys := outcomeKeys(tl)
	bw := f.w / float64(len(tl.Buckets))
	for i, b := range tl.Buckets {
		below := 0
		for _, k := range keys {
			n := b.Outcomes[k]
			if n == 0 {
				continue
			}
			y1, y0 := f.y(float64(below+n), top), f.y(float64(below), top)
			c.Rects = append(c.Rects, box{f.x0 + float64(i)*bw + bw*0.1, y1, bw * 0.8, y0 - y1, colorOf(k),
				fmt.Sprintf("%s %s: %d of %d", clock(b.Start, 0), k, n, b.Attempts)})
			below += n
		}
	}
	for _, k := range keys {
		c.Legend = append(c.Legend, swatch{colorOf(k), k})
	}
	return c
}

// minutesChart draws the 429s by minute of the hour, the busiest minute in
// a darker red.
func minutesChart(r RateLimited) chart {
	c := chart{Title: "429s by minute of the hour",
		Note: fmt.Sprintf("%d responses with status 429, by the minute of the hour they started in (UTC); jobs started by cron at :00 pile up in the first bar", r.Total),
		W:    chartW, H: chartH}
	f := newFrame(padLeft, chartH)
	peak := 0
	for _, n := range r.ByMinute {
		peak = max(peak, n)
	}
	top := niceMax(float64(peak))
	c.yAxis(f, top, "429s")
	bw := f.w / 60
	for m, n := range r.ByMinute {
		x := f.x0 + float64(m)*bw
		if m%5 == 0 {
			c.Texts = append(c.Texts, label{x + bw/2, f.y0 + f.h + 18, fmt.Sprintf(":%02d", m), "middle"})
		}
		if n == 0 {
			continue
		}
		fill := "#ff7f0e"
		if len(r.Top) > 0 && r.Top[0].N == n {
			fill = "#b71c1c"
		}
		y := f.y(float64(n), top)
		c.Rects = append(c.Rects, box{x + bw*0.1, y, bw * 0.8, f.y0 + f.h - y, fill,
			fmt.Sprintf(":%02d — %d 429s (%s)", m, n, pct(share(n, r.Total)))})
	}
	return c
}
