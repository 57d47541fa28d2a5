package gateway

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
)

// codeRateLimited is the error of a call a rate limit refused: its slot
// was further away than its policy's max_queue. 429.
const codeRateLimited = "rate_limited"

// newLimiter returns the Limiter of a config snapshot: its limits.rates
// and each provider's max_concurrent, over the Store every snapshot
// shares, so that a reload keeps every bucket's place, every pause and
// every call in flight. It is there even with no rates, to learn the
// pauses providers ask for.
func newLimiter(cfg *config.Config, store limit.Store) *limit.Limiter {
	limits := slices.Clone(cfg.Rates)
	for _, name := range slices.Sorted(maps.Keys(cfg.Providers)) {
		if n := cfg.Providers[name].MaxConcurrent; n > 0 {
			limits = append(limits, limit.Limit{Name: config.MaxConcurrentLimit, Provider: name, Scope: "provider", Concurrent: n})
		}
	}
	var longest time.Duration
	for _, p := range cfg.Policies {
		longest = max(longest, p.Timeout.Total)
	}
	// A slot in Redis outlives the longest call a policy allows: only a
	// host that died holding it loses it to the lease.
	return &limit.Limiter{Store: store, Scout: true, Limits: limits, Lease: longest + time.Minute, PromoteAfter: cfg.Limits.PromoteAfter,
		// Some providers count max_tokens at a call's start and correct to
		// the output used; others keep what max_tokens reserved.
		SettlesUnused: func(p string) bool {
			d, ok := dialect.Lookup(cfg.Providers[p].Kind)
			return ok && d.Traits().SettlesUnused
		}}
}

// hasKeyScope reports whether a limit of cfg is scoped per client, as
// scopedByKey does for budgets.
func hasKeyScope(cfg *config.Config) bool {
	return slices.ContainsFunc(cfg.Rates, func(l limit.Limit) bool { return l.Scope == "key" })
}

// answerRateLimited answers a call a rate limit refused, in the
// provider's shape, with when to try again.
func answerRateLimited(w http.ResponseWriter, d dialect.Dialect, le *limit.Error) {
	w.Header().Set("Retry-After", retryAfterSeconds(time.Now().Add(le.Wait), time.Now()))
	what := "rate limit " + le.Limit
	if le.Limit == "pause" {
		what = "the provider's own rate limit"
	}
	writeError(w, d, http.StatusTooManyRequests, codeRateLimited,
		fmt.Sprintf("sluice: %s is reached; this call's turn was %s away, longer than it may wait", what, le.Wait.Round(time.Millisecond)))
}

// rateLimitErr returns err's *limit.Error, nil when it has none.
func rateLimitErr(err error) *limit.Error {
	var le *limit.Error
	if errors.As(err, &le) {
		return le
	}
	return nil
}

// limitsView is what GET /sluice/limits answers.
type limitsView struct {
	Limits  []limitView         `json:"limits"`
	Buckets []bucketView        `json:"buckets"`
	Queued  int                 `json:"queued"`
	Stats   map[string]statView `json:"stats"`
	// Priorities are this process's calls per priority (interactive,
	// batch): waiting now, admitted, refused, and their time waited.
	Priorities map[string]priorityView `json:"priorities"`
}

type limitView struct {
	Name              string  `json:"name"`
	Provider          string  `json:"provider,omitempty"`
	Scope             string  `json:"scope"`
	RequestsPerMinute int64   `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int64   `json:"tokens_per_minute,omitempty"`
	Concurrent        int     `json:"concurrent,omitempty"`
	Reserve           float64 `json:"reserve,omitempty"` // the share batch calls may never take
}

type bucketView struct {
	Key         string     `json:"key"`
	FreeAt      *time.Time `json:"free_at,omitempty"`
	PausedUntil *time.Time `json:"paused_until,omitempty"`
	Queued      int        `json:"queued"`
	// QueuedBatch is how many of Queued are batch calls.
	QueuedBatch int `json:"queued_batch"`
	// Waiting is, for a concurrency key, the calls waiting for one of its
	// slots in every process sharing the state, per priority.
	Waiting map[string]int64 `json:"waiting,omitempty"`
	// InFlight is, for a concurrency key (…:concurrent), the slots taken
	// in every process sharing the state; 0 for a bucket or a pause.
	InFlight int64 `json:"in_flight"`
	// LearnedPerSecond is, for a pause, the pace its calls are held to
	// (limit.Limiter.PacedOf), SetBy what set it ("headers", "429" or
	// "limit"), SetAt when (none for a configured limit).
	LearnedPerSecond float64    `json:"learned_per_second,omitempty"`
	SetBy            string     `json:"set_by,omitempty"`
	SetAt            *time.Time `json:"set_at,omitempty"`
}

type statView struct {
	Queued int `json:"queued"`
	// InFlight is the slots of a concurrent limit this process's calls
	// hold now (every provider's, for max_concurrent).
	InFlight int    `json:"in_flight"`
	Admitted uint64 `json:"admitted"`
	Refused  uint64 `json:"refused"`
	Paused   uint64 `json:"paused,omitempty"`
}

// serveLimits answers GET /sluice/limits: the limits (limits.rates and
// each provider's max_concurrent), the
// buckets and pauses in the store with when each is next free, and this
// process's queue and counts.
func (g *Gateway) serveLimits(w http.ResponseWriter, d dialect.Dialect) {
	v, err := g.limitsView()
	if err != nil {
		writeError(w, d, http.StatusServiceUnavailable, codeStateUnavailable, "sluice: the limits cannot be read: "+err.Error())
		return
	}
	writeJSON(w, v)
}

// limitsView is what GET /sluice/limits answers, and status.json shows.
func (g *Gateway) limitsView() (limitsView, error) {
	var buckets []limit.Bucket
	var of []*limit.Limiter // the Limiter each bucket is of
	for _, l := range g.pacers() {
		bs, err := l.Buckets()
		if err != nil {
			return limitsView{}, err
		}
		buckets = append(buckets, bs...)
		of = append(of, slices.Repeat([]*limit.Limiter{l}, len(bs))...)
	}
	v := limitsView{Limits: []limitView{}, Buckets: []bucketView{}, Queued: g.limiter.Queued(), Stats: map[string]statView{},
		Priorities: priorityViews(g.limiter)}
	for _, l := range g.limiter.Limits { // limits.rates, then each provider's max_concurrent
		v.Limits = append(v.Limits, limitView{Name: l.Name, Provider: l.Provider, Scope: l.Scope,
			RequestsPerMinute: perMinute(l.Requests), TokensPerMinute: perMinute(l.Tokens), Concurrent: l.Concurrent, Reserve: l.Reserve})
	}
	for i, b := range buckets {
		bv := bucketView{Key: b.Key, Queued: b.Queued, QueuedBatch: b.QueuedBatch, Waiting: waitingView(b), InFlight: b.InFlight}
		if !b.FreeAt.IsZero() {
			t := b.FreeAt.UTC()
			bv.FreeAt = &t
		}
		if !b.PausedUntil.IsZero() {
			t := b.PausedUntil.UTC()
			bv.PausedUntil = &t
		}
		if p := of[i].PacedOf(b); p.PerSecond > 0 {
			bv.LearnedPerSecond, bv.SetBy = p.PerSecond, p.SetBy
			if !p.At.IsZero() {
				t := p.At.UTC()
				bv.SetAt = &t
			}
		}
		v.Buckets = append(v.Buckets, bv)
	}
	for name, s := range g.limiter.Stats() {
		v.Stats[name] = statView{Queued: s.Queued, InFlight: s.InFlight, Admitted: s.Admitted, Refused: s.Refused, Paused: s.Paused}
	}
	return v, nil
}

// perMinute is a rate in units per minute, 0 when it limits nothing.
func perMinute(r limit.Rate) int64 {
	if r.Limit == 0 || r.Per <= 0 {
		return 0
	}
	return int64(float64(r.Limit) * float64(time.Minute) / float64(r.Per))
}

// limitMetrics are the rate limiter's metrics: the wait of each attempt
// that waited, refusals, the calls waiting now and the concurrency slots
// held now.
type limitMetrics struct {
	prio     *priorityMetrics
	wait     *prometheus.HistogramVec
	admitted *prometheus.CounterVec
	refused  *prometheus.CounterVec
}

// newLimitMetrics registers the limiter's metrics in reg; limiter returns
// the current config's Limiter, nil before there is one.
func newLimitMetrics(reg *prometheus.Registry, limiter func() *limit.Limiter) *limitMetrics {
	m := &limitMetrics{
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
	}), inFlightCollector(limiter))
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

// observe counts an attempt's wait, or its refusal.
func (m *limitMetrics) observe(a *sluice.Attempt) {
	m.prio.observe(a)
	switch {
	case a.Outcome == sluice.OutcomeRateLimited:
		m.refused.WithLabelValues(a.Provider).Add(float64(max(a.Refused, 1)))
	case a.QueuedMS > 0:
		m.admitted.WithLabelValues(a.Provider).Inc()
		m.wait.WithLabelValues(a.Provider).Observe(a.QueuedMS / 1000)
	}
}

// limitStoreError logs a failure of the limits' store, after which a call
// is admitted under this process's own buckets and pauses, as an operator
// event (rate-limited, so that an outage of the store does not flood the
// log).
func (sh *shared) limitStoreError(err error) {
	n := sh.limitErrors.Add(1)
	sh.events.StoreError("limits", "rate limits: the state store failed; limits and pauses hold in this process alone meanwhile", err, "errors", n)
}

var learnedDesc = prometheus.NewDesc("sluice_ratelimit_learned_per_second",
	"The pace each scope's calls are held to, in calls per second, by pause key: the slowest of what the provider's headers "+
		"taught, what its 429s taught, and a configured limit (GET /sluice/limits says which set it, and when).",
	[]string{"limit"}, nil)

// pacers are the Limiters that learn paces: the gateway's, then each key
// pool's, by provider.
func (g *Gateway) pacers() []*limit.Limiter {
	return append([]*limit.Limiter{g.limiter}, g.pools.Limiters()...)
}

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
