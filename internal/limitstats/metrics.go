package limitstats

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/limit"
)

// Metrics are the rate limiter's metrics: the wait of each attempt that
// waited, refusals, the calls waiting now and the concurrency slots held
// now, the paces learned, and the waits per priority. Observe is safe for
// concurrent use.
type Metrics struct {
	prio     *priorityMetrics
	wait     *prometheus.HistogramVec
	admitted *prometheus.CounterVec
	refused  *prometheus.CounterVec
}

// NewMetrics registers the limiter's metrics in reg. limiter returns the
// current config's Limiter, nil before there is one; pacers the Limiters
// that learn paces (the gateway's, then each key pool's), read when
// scraped.
func NewMetrics(reg *prometheus.Registry, limiter func() *limit.Limiter, pacers func() []*limit.Limiter) *Metrics {
	m := &Metrics{
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sluice_ratelimit_wait_seconds",
			Help:    "Time attempts waited for a rate-limit slot, of those that waited, by provider.",
			Buckets: []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
		}, []string{"provider"}),
		admitted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_ratelimit_admitted_total", Help: "Attempts that waited for a rate-limit slot and were let go, by provider.",
		}, []string{"provider"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_ratelimit_refused_total", Help: "Calls refused with 429 rate_limited: their slot was beyond max_queue, by provider.",
		}, []string{"provider"}),
	}
	reg.MustRegister(m.wait, m.admitted, m.refused, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "sluice_ratelimit_queued", Help: "Calls waiting for a rate-limit slot now, in this process.",
	}, func() float64 {
		if l := limiter(); l != nil {
			return float64(l.Queued())
		}
		return 0
	}), inFlightCollector(limiter), learnedCollector(pacers))
	m.prio = newPriorityMetrics(reg, limiter)
	return m
}

var inFlightDesc = prometheus.NewDesc("sluice_ratelimit_in_flight",
	"Concurrency slots this process's calls hold now, by limit: each limits.rates limit with concurrent, "+
		"and max_concurrent (every provider's). 0 whenever no call is in flight; a higher floor is a leak.",
	[]string{"limit"}, nil)

// inFlightCollector reports sluice_ratelimit_in_flight when scraped: for
// every concurrent limit of the current Limiter, the slots this process
// holds (limit.Stats.InFlight), 0 for one not used yet. It reads no
// store: the slots held by every process sharing the state are in
// /sluice/limits, per key. Each config snapshot has its own Limiter, so
// for the moment a reload takes, the calls the old one admitted are
// counted only in the store's count per key.
type inFlightCollector func() *limit.Limiter

func (c inFlightCollector) Describe(ch chan<- *prometheus.Desc) { ch <- inFlightDesc }

func (c inFlightCollector) Collect(ch chan<- prometheus.Metric) {
	l := c()
	if l == nil {
		return
	}
	stats := l.Stats()
	seen := make(map[string]bool)
	for _, lim := range l.Limits {
		if lim.Concurrent <= 0 || seen[lim.Name] {
			continue
		}
		seen[lim.Name] = true
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(stats[lim.Name].InFlight), lim.Name)
	}
}

// Observe counts an attempt's wait, or its refusal.
func (m *Metrics) Observe(a *sluice.Attempt) {
	m.prio.observe(a)
	switch {
	case a.Outcome == sluice.OutcomeRateLimited:
		m.refused.WithLabelValues(a.Provider).Add(float64(max(a.Refused, 1)))
	case a.QueuedMS > 0:
		m.admitted.WithLabelValues(a.Provider).Inc()
		m.wait.WithLabelValues(a.Provider).Observe(a.QueuedMS / 1000)
	}
}

var learnedDesc = prometheus.NewDesc("sluice_ratelimit_learned_per_second",
	"The pace each scope's calls are held to, in calls per second, by pause key: the slowest of what the provider's headers "+
		"taught, what its 429s taught, and a configured limit (GET /sluice/limits says which set it, and when).",
	[]string{"limit"}, nil)

// learnedCollector reports sluice_ratelimit_learned_per_second when
// scraped: for every pause the Limiters it returns used in the last ten
// minutes (limit.Limiter.Buckets), the pace the store holds it to.
type learnedCollector func() []*limit.Limiter

func (c learnedCollector) Describe(ch chan<- *prometheus.Desc) { ch <- learnedDesc }

func (c learnedCollector) Collect(ch chan<- prometheus.Metric) {
	for _, l := range c() {
		buckets, _ := l.Buckets() // those read before an error are reported
		for _, b := range buckets {
			if p := l.PacedOf(b); p.PerSecond > 0 {
				ch <- prometheus.MustNewConstMetric(learnedDesc, prometheus.GaugeValue, p.PerSecond, b.Key)
			}
		}
	}
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
