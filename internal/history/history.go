// Package history keeps the last hour the gateway's status page shows: per
// provider and model, one bucket a minute of attempts by class, latency
// and time-to-first-byte histograms and the dollars replays saved; and the
// last failed attempts. What it costs is bounded whatever the request
// rate: fixed arrays, a capped number of series.
package history

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-llm/sluice"
)

// The bounds of the status page's history: what an hour of it costs does
// not grow with the request rate, only with the number of series, and that
// is capped because model names come from clients.
const (
	maxSeries      = 64 // provider/model series kept by name
	maxOtherSeries = 16 // then one "(other)" model series per provider
	maxFailures    = 50 // the last failed attempts kept
	maxNameLen     = 128
)

// Minutes is how many minutes a series keeps: one bucket a minute, for
// the last hour.
const Minutes = 60

// Other names the series that the models (and past that, the providers)
// beyond the bounds fold into, and a name too long to keep.
const Other = "(other)"

// ClassReplayed is the class of the calls answered from a kept answer
// (Idempotency-Key): Minute.Classes[ClassReplayed].
const ClassReplayed = "replayed"

// The classes an attempt is counted under, from its Outcome and its error
// class (the attempt log's outcome and error fields).
const (
	clsOK = iota
	clsTimeout
	clsRateLimited // a provider's 429
	clsQuota       // a 429 saying the quota is used up
	cls5xx
	cls4xx
	clsCut           // a stream cut, or stalled
	clsStreamError   // a provider's error event inside a stream
	clsConnection    // refused, reset, dns, eof …
	clsBreakerOpen   // refused by an open breaker, not sent
	clsBudgetRefused // refused by a spend budget, not sent
	clsLimitRefused  // refused by a rate limit or an empty key pool, not sent
	clsClientCancel
	clsReplayed  // answered from a kept answer (Idempotency-Key), not sent
	clsSkipped   // a fallback that cannot take the request, not sent
	clsHedgeLost // the attempt of a hedged call that the other answered first
	clsOther
	numClasses
)

// classNames names the classes in status.json, in the order above.
var classNames = [numClasses]string{"ok", "timeout", "rate_limited", "quota", "5xx", "4xx", "cut_stream",
	"stream_error", "connection", "breaker_open", "budget_refused", "limit_refused", "client_cancel", ClassReplayed, "skipped", "hedge_lost", "other"}

// classOf is the class of an attempt.
func classOf(a *sluice.Attempt) int {
	switch a.Outcome {
	case sluice.OutcomeOK:
		return clsOK
	case sluice.OutcomeCircuitOpen:
		return clsBreakerOpen
	case sluice.OutcomeBudgetExhausted:
		return clsBudgetRefused
	case sluice.OutcomeRateLimited:
		return clsLimitRefused
	case sluice.OutcomeClientCancel:
		return clsClientCancel
	case sluice.OutcomeReplayed:
		return clsReplayed
	case sluice.OutcomeSkipped:
		return clsSkipped
	case sluice.OutcomeHedgeLost:
		return clsHedgeLost
	case sluice.OutcomeStreamStalled:
		return clsCut
	}
	e := a.Error
	switch {
	case e == "quota_exhausted":
		return clsQuota
	case e == "status_429", e == "error_event_429":
		return clsRateLimited
	case strings.HasPrefix(e, "timeout"), a.Outcome == sluice.OutcomeTimeout:
		return clsTimeout
	case strings.HasPrefix(e, "status_5"):
		return cls5xx
	case strings.HasPrefix(e, "status_4"):
		return cls4xx
	case e == "stream_cut":
		return clsCut
	case e == "stream_error", strings.HasPrefix(e, "error_event_"):
		return clsStreamError
	case e == "client_cancel":
		return clsClientCancel
	case e == "connect_refused", e == "reset", e == "eof", e == "dns", e == "connect", e == "connection":
		return clsConnection
	case e == "" && a.Status >= 200 && a.Status < 400:
		return clsOK
	}
	return clsOther
}

// latencyBounds are the upper bounds, in milliseconds, of the buckets of
// the per-minute latency and TTFB histograms; the last bucket is open.
var latencyBounds = [...]float64{10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 20000, 30000, 60000, 120000, 300000}

const numLatencyBuckets = len(latencyBounds) + 1

// histogram counts milliseconds in fixed buckets, and keeps the largest.
type histogram struct {
	n   [numLatencyBuckets]uint32
	max float32
}

func (h *histogram) add(ms float64) {
	i := 0
	for i < len(latencyBounds) && ms > latencyBounds[i] {
		i++
	}
	h.n[i]++
	h.max = max(h.max, float32(ms))
}

func (h *histogram) merge(o *histogram) {
	for i, n := range o.n {
		h.n[i] += n
	}
	h.max = max(h.max, o.max)
}

// quantile is the upper bound of the bucket holding the q-th sample
// (nearest rank), never above the largest sample: 0 with no samples.
func (h *histogram) quantile(q float64) float64 {
	var total uint64
	for _, n := range h.n {
		total += uint64(n)
	}
	if total == 0 {
		return 0
	}
	rank := uint64(q*float64(total) + 0.9999999)
	rank = max(rank, 1)
	var seen uint64
	for i, n := range h.n {
		seen += uint64(n)
		if seen >= rank {
			if i < len(latencyBounds) {
				return min(latencyBounds[i], float64(h.max))
			}
			break
		}
	}
	return float64(h.max)
}

// minute is one minute of a series.
type minute struct {
	at      int64 // the minute, in minutes since the Unix epoch
	classes [numClasses]uint32
	saved   float64   // USD the minute's replays did not spend
	latency histogram // attempts that went upstream
	ttfb    histogram // of those, the ones with a first byte
	calls   uint32    // calls begun: their first attempts, a hedge's not
	hedges  Hedges
}

// series is the last hour of a provider and model: minute t is at
// mins[t%Minutes] while its at is t.
type series struct {
	provider, model string
	mins            [Minutes]minute
}

type seriesKey struct{ provider, model string }

// failure is one failed attempt.
type failure struct {
	at                       time.Time
	provider, model, class   string
	errClass, outcome, reqID string
	status                   int
}

// History is the status page's memory: per provider and model, one minute
// a bucket for the last hour, and the last failed attempts. It costs about
// 12 KiB a series, at most maxSeries+maxOtherSeries+1 (81) series,
// whatever the rate: Observe fills fixed arrays under one short lock and
// allocates only for a new series. It is safe for concurrent use.
type History struct {
	mu       sync.Mutex
	series   map[seriesKey]*series
	others   int // "(other)" series made
	failures [maxFailures]failure
	nfail    uint64 // failures seen; the latest is at (nfail-1)%maxFailures
}

// New returns an empty History.
func New() *History {
	return &History{series: make(map[seriesKey]*series)}
}

// Observe counts one attempt (its attempt log line) in the minute it
// ended; a failed one is kept among the last failures too. A replay's
// line (outcome replayed) counts the dollars it did not spend, its
// SavedUSD.
func (h *History) Observe(a *sluice.Attempt) {
	saved := a.SavedUSD
	now := time.Now()
	cls := classOf(a)
	at := now.Unix() / 60
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.seriesOf(a.Provider, a.Model)
	m := &s.mins[at%Minutes]
	if m.at != at {
		*m = minute{at: at}
	}
	m.classes[cls]++
	m.saved += saved
	m.countCall(a)
	if a.Status != 0 || a.LatencyMS > 0 {
		m.latency.add(a.LatencyMS)
		if a.TTFBMS > 0 {
			m.ttfb.add(a.TTFBMS)
		}
	}
	if cls == clsOK {
		return
	}
	f := &h.failures[h.nfail%maxFailures]
	h.nfail++
	*f = failure{at: now, provider: s.provider, model: s.model, class: classNames[cls],
		errClass: a.Error, outcome: string(a.Outcome), reqID: a.RequestID, status: a.Status}
	if len(f.errClass) > maxNameLen { // the class of a provider's error: short, but not ours
		f.errClass = Other
	}
	if len(f.reqID) > maxNameLen {
		f.reqID = strings.Clone(f.reqID[:maxNameLen])
	}
}

// countCall counts a call begun (its first attempt's line, or a line of
// refused calls for each it stands for) and what its hedging did: a
// hedge sent (the hedge's first line), won (the first attempt's line says
// hedge_lost) or refused.
func (m *minute) countCall(a *sluice.Attempt) {
	switch {
	case a.Attempt == 1 && a.Hedge == sluice.HedgeSent:
		m.hedges.Sent++
	case a.Attempt <= 1:
		m.calls += uint32(max(a.Refused, 1))
	}
	switch {
	case a.Outcome == sluice.OutcomeHedgeLost && a.Hedge != sluice.HedgeSent:
		m.hedges.Won++
	case a.Hedge == sluice.HedgeRefused:
		m.hedges.Refused++
	}
}

// seriesOf finds or makes the series of provider and model, folding the
// model into "(other)" past maxSeries, and both past that.
func (h *History) seriesOf(provider, model string) *series {
	if s, ok := h.series[seriesKey{provider, model}]; ok {
		return s
	}
	if len(provider) > maxNameLen {
		provider = Other
	}
	if len(model) > maxNameLen {
		model = Other
	}
	if len(h.series) >= maxSeries {
		model = Other
		if _, ok := h.series[seriesKey{provider, model}]; !ok && h.others >= maxOtherSeries {
			provider = Other
		}
	}
	k := seriesKey{provider, model}
	if s, ok := h.series[k]; ok {
		return s
	}
	if model == Other {
		h.others++
	}
	s := &series{provider: strings.Clone(provider), model: strings.Clone(model)}
	h.series[k] = s
	return s
}

// Series is the last hour of one provider and model, as status.json shows
// it.
type Series struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Minutes are the last hour's, oldest first; Minutes[Minutes-1] is
	// the current minute, so far.
	Minutes []Minute `json:"minutes"`
	// Hour sums the hour.
	Hour Minute `json:"hour"`
}

// Minute is a minute (or the hour) of a series: attempts by class, and
// latency and time-to-first-byte quantiles in milliseconds.
type Minute struct {
	// Start is when the minute began; zero for the hour.
	Start time.Time `json:"start,omitzero"`
	// Attempts counts the attempts of every class.
	Attempts uint64 `json:"attempts"`
	// Classes counts the attempts by class: ok, timeout, rate_limited,
	// quota, 5xx, 4xx, cut_stream, stream_error, connection,
	// breaker_open, budget_refused, limit_refused, client_cancel,
	// replayed, skipped, hedge_lost, other. A class with none is left out.
	Classes map[string]uint32 `json:"classes,omitempty"`
	// LatencyMS is over the attempts that went upstream, TTFBMS over
	// those of them with a first byte.
	LatencyMS Quantiles `json:"latency_ms"`
	TTFBMS    Quantiles `json:"ttfb_ms"`
	// SavedUSD is what the replays (class replayed) did not spend: what
	// their first calls cost.
	SavedUSD float64 `json:"saved_usd,omitempty"`
	// Calls counts the calls begun: their first attempts, a hedge's not.
	Calls uint64 `json:"calls"`
	// Hedges is what hedging did (policy hedge); omitted when nothing.
	Hedges Hedges `json:"hedges,omitzero"`
}

// Hedges counts what hedging did: hedges sent (each is an extra call to a
// provider), the calls a hedge answered first, and the hedges refused
// (over max_share, the breaker not closed, no rate-limit slot at once, a
// budget). A hedge's series is its target's, which may be a fallback.
type Hedges struct {
	Sent    uint32 `json:"sent"`
	Won     uint32 `json:"won"`
	Refused uint32 `json:"refused"`
}

// Add adds o's counts to h's.
func (h *Hedges) Add(o Hedges) {
	h.Sent += o.Sent
	h.Won += o.Won
	h.Refused += o.Refused
}

// Quantiles are the median and the 95th percentile of a histogram, in
// milliseconds: the upper bound of the bucket holding the rank, never
// above the largest sample; 0 with no samples.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
}

func viewOf(m *minute) Minute {
	v := Minute{LatencyMS: Quantiles{m.latency.quantile(.5), m.latency.quantile(.95)},
		TTFBMS: Quantiles{m.ttfb.quantile(.5), m.ttfb.quantile(.95)}, SavedUSD: m.saved,
		Calls: uint64(m.calls), Hedges: m.hedges}
	for c, n := range m.classes {
		if n > 0 {
			if v.Classes == nil {
				v.Classes = map[string]uint32{}
			}
			v.Classes[classNames[c]] = n
			v.Attempts += uint64(n)
		}
	}
	return v
}

// Failure is one failed attempt, as status.json shows it: its class, and
// the attempt log's error, outcome, status and request id.
type Failure struct {
	TS        time.Time `json:"ts"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	Class     string    `json:"class"`
	Error     string    `json:"error,omitempty"`
	Outcome   string    `json:"outcome"`
	Status    int       `json:"status"`
	RequestID string    `json:"request_id"`
}

// Snapshot returns the series, busiest first, as of now, and the last
// failed attempts, newest first.
func (h *History) Snapshot(now time.Time) ([]Series, []Failure) {
	cur := now.Unix() / 60
	h.mu.Lock()
	all := make([]*series, 0, len(h.series))
	for _, s := range h.series {
		c := *s // copied under the lock, viewed after it
		all = append(all, &c)
	}
	fails := make([]Failure, 0, maxFailures)
	for i := uint64(0); i < min(h.nfail, maxFailures); i++ {
		f := &h.failures[(h.nfail-1-i)%maxFailures]
		fails = append(fails, Failure{TS: f.at.UTC(), Provider: f.provider, Model: f.model, Class: f.class,
			Error: f.errClass, Outcome: f.outcome, Status: f.status, RequestID: f.reqID})
	}
	h.mu.Unlock()
	out := make([]Series, 0, len(all))
	for _, s := range all {
		v := Series{Provider: s.provider, Model: s.model, Minutes: make([]Minute, Minutes)}
		var hour minute
		for i := range Minutes {
			at := cur - Minutes + 1 + int64(i)
			m := &s.mins[at%Minutes]
			if m.at != at {
				m = &minute{at: at}
			}
			v.Minutes[i] = viewOf(m)
			v.Minutes[i].Start = time.Unix(at*60, 0).UTC()
			for c, n := range m.classes {
				hour.classes[c] += n
			}
			hour.saved += m.saved
			hour.calls += m.calls
			hour.hedges.Add(m.hedges)
			hour.latency.merge(&m.latency)
			hour.ttfb.merge(&m.ttfb)
		}
		v.Hour = viewOf(&hour)
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Series) int {
		return cmp.Or(cmp.Compare(b.Hour.Attempts, a.Hour.Attempts),
			cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model))
	})
	return out, fails
}
