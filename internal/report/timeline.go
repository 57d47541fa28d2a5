package report

import (
	"slices"
	"time"
)

// Timeline is the attempts cut into equal buckets of time, for charts.
type Timeline struct {
	// StepSeconds is the width of a bucket.
	StepSeconds float64 `json:"step_seconds"`
	// Buckets start at From truncated to the step, one per step up to To.
	Buckets []Bucket `json:"buckets"`
}

// Bucket is the attempts that started within one step of time, a folded
// refusal line as the refusals it counts.
type Bucket struct {
	Start    time.Time `json:"start"`
	Attempts int       `json:"attempts"`
	// Outcomes counts the bucket's attempts by outcome.
	Outcomes map[string]int `json:"outcomes"`
	// Latency is the nearest-rank distribution of latency_ms of the
	// attempts that went upstream.
	Latency     Dist `json:"latency_ms"`
	RateLimited int  `json:"rate_limited"`
}

// maxBuckets bounds the number of buckets in a timeline.
const maxBuckets = 90

// steps are the bucket widths a timeline chooses from: the smallest that
// keeps it within maxBuckets.
var steps = []time.Duration{
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute,
	15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour,
	3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
	7 * 24 * time.Hour, 30 * 24 * time.Hour, 365 * 24 * time.Hour,
}

// timeline buckets lines, sorted by time.
func timeline(lines []Line) Timeline {
	if len(lines) == 0 {
		return Timeline{StepSeconds: time.Minute.Seconds(), Buckets: []Bucket{}}
	}
	from, to := lines[0].TS, lines[len(lines)-1].TS
	step := chooseStep(from, to)
	start := from.UTC().Truncate(step)
	n := min(int(to.Sub(start)/step)+1, maxBuckets)
	buckets := make([]Bucket, n)
	lat := make([][]float64, n)
	for i := range buckets {
		buckets[i] = Bucket{Start: start.Add(time.Duration(i) * step), Outcomes: map[string]int{}}
	}
	for _, l := range lines {
		i := min(max(int(l.TS.Sub(start)/step), 0), n-1)
		b := &buckets[i]
		if w := attempts(&l); w > 0 {
			b.Attempts += w
			b.Outcomes[string(l.Outcome)] += w
		}
		if l.Status == 429 {
			b.RateLimited++
		}
		if wentUpstream(l) {
			lat[i] = append(lat[i], l.LatencyMS)
		}
	}
	for i := range buckets {
		buckets[i].Latency = distOf(slices.Clip(lat[i]))
	}
	return Timeline{StepSeconds: step.Seconds(), Buckets: buckets}
}

// chooseStep returns the smallest step that covers from..to in at most
// maxBuckets buckets once from is truncated to it.
func chooseStep(from, to time.Time) time.Duration {
	for _, s := range steps {
		start := from.UTC().Truncate(s)
		if to.Sub(start)/s < maxBuckets {
			return s
		}
	}
	return steps[len(steps)-1]
}
