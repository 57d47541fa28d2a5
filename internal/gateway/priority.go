package gateway

import (
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/limit"
)

// requestPriority returns the priority a request's Sluice-Priority header
// asks for ("" when it has none, and the policy's stands), or an error
// naming the header's value and the fix.
func requestPriority(r *http.Request) (sluice.Priority, error) {
	v, ok := r.Header["Sluice-Priority"]
	if !ok {
		return "", nil
	}
	switch p := sluice.Priority(v[0]); {
	case len(v) > 1:
		return "", fmt.Errorf("sluice: Sluice-Priority is given %d times; send it once, interactive or batch", len(v))
	case p == sluice.PriorityInteractive || p == sluice.PriorityBatch:
		return p, nil
	default:
		return "", fmt.Errorf("sluice: Sluice-Priority %q is not a priority; send interactive or batch", safeValue(v[0]))
	}
}

// safeValue returns a header value for an error message: at most 64
// bytes, printable ASCII, the rest as '?'.
func safeValue(s string) string {
	b := []byte(s)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}

// priorities are the priorities, in the order the metrics and views list
// them.
var priorities = [...]limit.Priority{limit.Interactive, limit.Batch}

// priorityMetrics are the rate limiter's metrics per priority: the calls
// waiting now, and how long attempts waited.
type priorityMetrics struct {
	wait *prometheus.HistogramVec
	obs  [len(priorities)]prometheus.Observer // wait's series, looked up once
}

var priorityQueuedDesc = prometheus.NewDesc("sluice_ratelimit_priority_queued",
	"Calls waiting for a rate-limit or concurrency slot now, in this process, by the priority they started with.",
	[]string{"priority"}, nil)

// newPriorityMetrics registers the metrics per priority in reg.
func newPriorityMetrics(reg *prometheus.Registry, limiter func() *limit.Limiter) *priorityMetrics {
	m := &priorityMetrics{wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "sluice_ratelimit_priority_wait_seconds",
		Help:    "Time attempts waited for a rate-limit or concurrency slot, every attempt admitted (0 included), by priority.",
		Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 1.5, 2.5, 5, 10, 30, 60, 120},
	}, []string{"priority"})}
	reg.MustRegister(m.wait, priorityQueued(limiter))
	for i, p := range priorities {
		m.obs[i] = m.wait.WithLabelValues(string(p)) // both series from the start
	}
	return m
}

// observe counts the wait of an attempt that was sent (or answered).
func (m *priorityMetrics) observe(a *sluice.Attempt) {
	if a.Priority == "" || a.Outcome == sluice.OutcomeRateLimited || a.Outcome == sluice.OutcomeReplayed ||
		a.Outcome == sluice.OutcomeCircuitOpen || a.Outcome == sluice.OutcomeBudgetExhausted {
		return
	}
	for i, p := range priorities {
		if sluice.Priority(p) == a.Priority {
			m.obs[i].Observe(a.QueuedMS / 1000)
		}
	}
}

// priorityQueued reports sluice_ratelimit_priority_queued when scraped.
type priorityQueued func() *limit.Limiter

func (c priorityQueued) Describe(ch chan<- *prometheus.Desc) { ch <- priorityQueuedDesc }

func (c priorityQueued) Collect(ch chan<- prometheus.Metric) {
	var stats map[limit.Priority]limit.PriorityStats
	if l := c(); l != nil {
		stats = l.PriorityStats()
	}
	for _, p := range priorities {
		ch <- prometheus.MustNewConstMetric(priorityQueuedDesc, prometheus.GaugeValue, float64(stats[p].Queued), string(p))
	}
}

// priorityView is, in GET /sluice/limits, this process's calls of one
// priority.
type priorityView struct {
	Queued   int     `json:"queued"`
	Admitted uint64  `json:"admitted"`
	Refused  uint64  `json:"refused"`
	WaitedMS float64 `json:"waited_ms"` // of the admitted, summed
}

// priorityViews returns the views of l's priorities.
func priorityViews(l *limit.Limiter) map[string]priorityView {
	out := make(map[string]priorityView, len(priorities))
	for p, s := range l.PriorityStats() {
		out[string(p)] = priorityView{Queued: s.Queued, Admitted: s.Admitted, Refused: s.Refused,
			WaitedMS: float64(s.Waited) / float64(time.Millisecond)}
	}
	return out
}

// waitingView returns a concurrency key's waiting calls per priority, in
// every process sharing the state; nil for a bucket or a pause.
func waitingView(b limit.Bucket) map[string]int64 {
	if b.Waiting == nil {
		return nil
	}
	out := make(map[string]int64, len(b.Waiting))
	for p, n := range b.Waiting {
		out[string(p)] = n
	}
	return out
}
