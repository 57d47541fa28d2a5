package gateway

import (
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
)

// metrics are the gateway's Prometheus metrics. Labels never carry keys,
// bodies or client-chosen text beyond the configured names.
type metrics struct {
	registry       *prometheus.Registry
	spent          *prometheus.CounterVec
	handler        http.Handler
	attempts       *prometheus.CounterVec
	retries        *prometheus.CounterVec
	refusedRetries *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	ttfb           *prometheus.HistogramVec
	fallbacks      *prometheus.CounterVec
	reloads        *prometheus.CounterVec
	hedges         [3]prometheus.Counter // won, lost, refused (sluice_hedges_total)
	counters       sync.Map              // attemptKey → prometheus.Counter
	byProv         sync.Map              // provider → *provMetrics
	spentBy        sync.Map              // spentKey → prometheus.Counter
}

type attemptKey struct {
	provider string
	outcome  sluice.Outcome
	status   int
}

type provMetrics struct {
	retries        prometheus.Counter
	refusedRetries prometheus.Counter
	latency, ttfbH prometheus.Observer
}

// errorCounter is an attempt-log writer that counts its failed writes
// (logfile.File).
type errorCounter interface{ Errors() uint64 }

func newMetrics(store breaker.Store, knownBreakers func() []string, attemptLog io.Writer) *metrics {
	reg := prometheus.NewRegistry()
	m := &metrics{
		registry: reg,
		spent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_spend_usd_total", Help: "USD spent, from the answers' usage, by provider and model.",
		}, []string{"provider", "model"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_attempts_total", Help: "Upstream attempts, by provider, outcome and HTTP status (0: none).",
		}, []string{"provider", "outcome", "status"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_retries_total", Help: "Attempts that were followed by a retry.",
		}, []string{"provider"}),
		refusedRetries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_retry_budget_exhausted_total", Help: "Retries the retry budget refused: the attempt's failure was final.",
		}, []string{"provider"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sluice_attempt_duration_seconds", Help: "Attempt duration, start to last byte.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120, 300, 600},
		}, []string{"provider"}),
		ttfb: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sluice_attempt_ttfb_seconds", Help: "Attempt time to response headers, or to the first event of a stream.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 30, 60, 120},
		}, []string{"provider"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_fallbacks_total", Help: "Calls answered by a route's fallback instead of its primary.",
		}, []string{"route", "provider"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_config_reloads_total", Help: "Config reloads (SIGHUP), by result: ok, or error when the new config was refused.",
		}, []string{"result"}),
	}
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("error")
	hedges := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "sluice_hedges_total", Help: "Hedged calls (policy hedge), by result: won (the hedge answered first), lost (the first attempt did), refused (not sent: over max_share, the breaker not closed, no rate-limit slot, the budgets).",
	}, []string{"result"})
	for i, r := range []string{"won", "lost", "refused"} {
		m.hedges[i] = hedges.WithLabelValues(r)
	}
	reg.MustRegister(hedges)
	logErrors := func() float64 { return 0 }
	if ec, ok := attemptLog.(errorCounter); ok {
		logErrors = func() float64 { return float64(ec.Errors()) }
	}
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "sluice_attempt_log_errors_total", Help: "Attempt-log lines that could not be written (disk full, say).",
	}, logErrors))
	reg.MustRegister(m.spent, m.attempts, m.retries, m.refusedRetries, m.latency, m.ttfb, m.fallbacks, m.reloads,
		&breakerCollector{store: store, known: knownBreakers},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m
}

// observe counts one attempt. It is the Transports' Observe hook.
func (m *metrics) observe(a *sluice.Attempt) {
	k := attemptKey{a.Provider, a.Outcome, a.Status}
	c, ok := m.counters.Load(k)
	if !ok {
		c, _ = m.counters.LoadOrStore(k, m.attempts.WithLabelValues(a.Provider, string(a.Outcome), strconv.Itoa(a.Status)))
	}
	c.(prometheus.Counter).Inc()
	switch {
	case a.Outcome == sluice.OutcomeHedgeLost && a.Hedge == sluice.HedgeSent:
		m.hedges[1].Inc() // the hedge lost
	case a.Outcome == sluice.OutcomeHedgeLost:
		m.hedges[0].Inc() // the first attempt lost: the hedge won
	case a.Hedge == sluice.HedgeRefused:
		m.hedges[2].Inc()
	}
	if a.Outcome == sluice.OutcomeCircuitOpen {
		return
	}
	if a.CostUSD > 0 {
		m.spentCounter(a.Provider, a.Model).Add(a.CostUSD)
	}
	pm := m.provider(a.Provider)
	if a.Outcome == sluice.OutcomeRetry {
		pm.retries.Inc()
	}
	if a.RetryBudgetExhausted {
		pm.refusedRetries.Inc()
	}
	pm.latency.Observe(a.LatencyMS / 1000)
	pm.ttfbH.Observe(a.TTFBMS / 1000)
}

// spentKey names the spend counter of a provider and model.
type spentKey struct{ provider, model string }

// spentCounter returns the spend counter of provider and model, found in
// the vector once.
func (m *metrics) spentCounter(provider, model string) prometheus.Counter {
	k := spentKey{provider, model}
	if c, ok := m.spentBy.Load(k); ok {
		return c.(prometheus.Counter)
	}
	c, _ := m.spentBy.LoadOrStore(k, m.spent.WithLabelValues(provider, model))
	return c.(prometheus.Counter)
}

// fallback counts a call that a route's fallback answered.
func (m *metrics) fallback(route, provider string) {
	m.fallbacks.WithLabelValues(route, provider).Inc()
}

func (m *metrics) provider(name string) *provMetrics {
	if v, ok := m.byProv.Load(name); ok {
		return v.(*provMetrics)
	}
	v, _ := m.byProv.LoadOrStore(name, &provMetrics{
		retries:        m.retries.WithLabelValues(name),
		refusedRetries: m.refusedRetries.WithLabelValues(name),
		latency:        m.latency.WithLabelValues(name),
		ttfbH:          m.ttfb.WithLabelValues(name),
	})
	return v.(*provMetrics)
}

// breakerCollector reports every breaker of the store when scraped, and
// every known one it holds no record of, closed: its state and its
// transitions, as the shared store records them.
type breakerCollector struct {
	store breaker.Store
	known func() []string // the names to report even without a record; may be nil
}

var (
	breakerStateDesc = prometheus.NewDesc("sluice_breaker_state",
		"Breaker state: 0 closed, 1 open, 2 half_open.", []string{"breaker"}, nil)
	breakerTransitionsDesc = prometheus.NewDesc("sluice_breaker_transitions_total",
		"State changes of the breaker, as recorded in the state store.", []string{"breaker"}, nil)
	breakerStoreUpDesc = prometheus.NewDesc("sluice_state_store_up",
		"1 when the scrape read the breakers from the state store and they are shared through it; 0 when the read failed or the breakers count locally (sluice_state_store_degraded 1). Never 1 together with sluice_state_store_degraded.", nil, nil)
)

// degradable is a shared store that can fall back to local breakers.
type degradable interface {
	Degraded() bool
	FallbacksTotal() uint64
}

var (
	storeDegradedDesc = prometheus.NewDesc("sluice_state_store_degraded",
		"1 while the shared state store is unreachable or cannot be written and breakers count locally.", nil, nil)
	storeFallbacksDesc = prometheus.NewDesc("sluice_state_store_fallbacks_total",
		"Times breakers went local because the shared state store was unreachable or could not be written.", nil, nil)
)

func (c *breakerCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storeDegradedDesc
	ch <- storeFallbacksDesc
	ch <- breakerStateDesc
	ch <- breakerTransitionsDesc
	ch <- breakerStoreUpDesc
}

// Collect reads the breakers first, then whether the store is degraded:
// a read that failed over to local breakers is seen degraded in the same
// scrape, and up is 1 only when the read succeeded on the shared store.
func (c *breakerCollector) Collect(ch chan<- prometheus.Metric) {
	var known []string
	if c.known != nil {
		known = c.known()
	}
	list, err := records(c.store, known)
	degraded := false
	if d, ok := c.store.(degradable); ok {
		degraded = d.Degraded()
		ch <- prometheus.MustNewConstMetric(storeDegradedDesc, prometheus.GaugeValue, b2f(degraded))
		ch <- prometheus.MustNewConstMetric(storeFallbacksDesc, prometheus.CounterValue, float64(d.FallbacksTotal()))
	}
	ch <- prometheus.MustNewConstMetric(breakerStoreUpDesc, prometheus.GaugeValue, b2f(err == nil && !degraded))
	if err != nil {
		return
	}
	for name, r := range list {
		ch <- prometheus.MustNewConstMetric(breakerStateDesc, prometheus.GaugeValue, float64(r.State), name)
		ch <- prometheus.MustNewConstMetric(breakerTransitionsDesc, prometheus.CounterValue, float64(r.Transitions), name)
	}
}

// b2f is 1 for true, 0 for false: a gauge's value.
func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
