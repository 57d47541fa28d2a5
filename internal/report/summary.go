package report

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-llm/sluice"
)

// Summary holds every figure of a report. It is what --json prints.
type Summary struct {
	// Inputs lists what was read from each input; set by Run.
	Inputs []Input `json:"inputs"`
	// Malformed is the number of lines skipped as malformed; set by Run.
	Malformed int `json:"malformed"`
	// OutsideWindow is the number of attempts left out by --since and
	// --until; set by Run.
	OutsideWindow int `json:"outside_window"`
	// From and To are the times of the first and last attempt.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Attempts is the number of attempts, sent or refused: one per line,
	// and a folded refusal line as the refusals it counts; a call answered
	// from a kept answer (outcome replayed) made none. Upstream is the
	// number of them that went upstream (neither refused nor replayed).
	// Calls is the number of calls, as every figure counts them (see
	// callsOf): distinct request ids, each refused call a folded line
	// counts, and a line without a request id as a call of its own.
	Attempts int `json:"attempts"`
	Upstream int `json:"upstream_attempts"`
	Calls    int `json:"calls"`
	// AttemptsPerCall is how many attempts each call sent upstream, as
	// its Sluice-Attempts header said: 0 for a call refused or replayed.
	AttemptsPerCall PerCall `json:"attempts_per_call"`
	// Replays counts the calls answered from a kept answer
	// (Idempotency-Key), and the dollars they did not spend.
	Replays Replays `json:"replays"`
	// Incident says which calls failed, since when, at which provider.
	Incident Incident `json:"incident"`
	// Failures counts failed attempts and calls by reason and provider,
	// with sample request ids, most failed calls first.
	Failures []Failure `json:"failures"`
	// CallResults counts calls by the answer they returned: the outcome
	// of the attempt they ended on (its own line with the highest attempt
	// number, see callRec.end), or, when that attempt was refused after
	// one went upstream, fail or timeout, the answer of the last attempt
	// upstream, which the caller got (callRec.answer). ok and replayed are
	// the calls answered.
	CallResults []Count `json:"call_results"`
	// Outcomes counts attempts by outcome, most frequent first; they add
	// up to Attempts (replays are no attempts).
	Outcomes []Count `json:"outcomes"`
	// Statuses counts attempts by HTTP status ("0": none arrived), in
	// ascending order of status.
	Statuses []Count `json:"statuses"`
	// Overall is latency and time to first byte over every provider.
	Overall Latency `json:"latency_overall"`
	// Latency is latency and time to first byte per provider and model.
	Latency []Latency `json:"latency"`
	// Retries is what the attempts with outcome "retry" waited.
	Retries Retries `json:"retries"`
	// Queued is what attempts waited for a rate-limit slot (queued_ms),
	// and the calls rate limits refused.
	Queued Queued `json:"queued"`
	// Keys counts the attempts of every pool key by provider and key (a
	// line without a key is not counted): rate limits, used-up quota and
	// other failures, by provider, most 429s first. It keeps at most 50
	// keys, those with the most 429s; KeysLeftOut is how many more the log
	// names.
	Keys        []KeyUse `json:"keys"`
	KeysLeftOut int      `json:"keys_left_out"`
	// Openings are the breaker openings seen in the log, by start time.
	Openings []Opening `json:"breaker_openings"`
	// SpendUSD is the sum of cost_usd; Spend splits it by provider and
	// model, largest first.
	SpendUSD float64 `json:"spend_usd"`
	Spend    []Spend `json:"spend"`
	// RateLimited is the 429s by minute of the hour.
	RateLimited RateLimited `json:"rate_limited"`
	// OverTime is the attempts cut into equal time buckets.
	OverTime Timeline `json:"over_time"`
}

// Count is how many of a kind, and their share of the whole (0 to 1).
type Count struct {
	Key   string  `json:"key"`
	N     int     `json:"n"`
	Share float64 `json:"share"`
}

// PerCall is the distribution of attempts per call.
type PerCall struct {
	Mean float64 `json:"mean"`
	Max  int     `json:"max"`
	// Hist counts calls by their number of attempts ("1", "2", …).
	Hist []Count `json:"hist"`
}

// Latency is the latency and time-to-first-byte distribution of one
// provider and model (both empty for the overall row). Latency counts the
// attempts that went upstream (every outcome but circuit_open,
// budget_exhausted, rate_limited and replayed); TTFB counts those with
// ttfb_ms > 0.
type Latency struct {
	Provider string `json:"provider"`
	Model    string `json:"model"`
	Latency  Dist   `json:"latency_ms"`
	TTFB     Dist   `json:"ttfb_ms"`
}

// Retries is the count of attempts with outcome "retry" and the backoff
// (retry_in_ms) chosen after them.
type Retries struct {
	Count     int     `json:"count"`
	WaitSumMS float64 `json:"wait_sum_ms"`
	WaitP50MS float64 `json:"wait_p50_ms"`
	WaitMaxMS float64 `json:"wait_max_ms"`
	// After counts retried attempts by why they failed: the error class
	// (status_503, timeout_first_byte, error_event_529, …).
	After []Count `json:"after"`
}

// Queued is the attempts that waited for a rate-limit slot, how long, and
// the calls refused with outcome rate_limited (a folded line counts the
// calls it stands for).
type Queued struct {
	Count     int     `json:"count"`
	WaitSumMS float64 `json:"wait_sum_ms"`
	WaitP50MS float64 `json:"wait_p50_ms"`
	WaitP99MS float64 `json:"wait_p99_ms"`
	WaitMaxMS float64 `json:"wait_max_ms"`
	Refused   int     `json:"refused"`
	// ByPriority splits them by priority (interactive, then batch).
	ByPriority []PriorityQueued `json:"by_priority,omitempty"`
}

// Spend is the settled cost of one provider and model.
type Spend struct {
	Provider string  `json:"provider"`
	Model    string  `json:"model"`
	USD      float64 `json:"usd"`
}

// Summarize computes the report of lines. It does not change lines. The
// fields that Run sets (Inputs, Malformed, OutsideWindow) are left zero.
func Summarize(lines []Line) Summary {
	sorted := slices.Clone(lines)
	slices.SortStableFunc(sorted, func(a, b Line) int { return a.TS.Compare(b.TS) })
	var s Summary
	for i := range sorted {
		s.Attempts += attempts(&sorted[i])
		if wentUpstream(sorted[i]) {
			s.Upstream++
		}
	}
	if len(sorted) > 0 {
		s.From, s.To = sorted[0].TS, sorted[len(sorted)-1].TS
	}
	ends := groupCalls(sorted)
	s.Calls = len(ends)
	s.AttemptsPerCall, s.CallResults = perCall(ends, s.Upstream)
	s.Incident = incident(ends)
	s.Failures = failures(sorted, ends)
	s.Outcomes = counted(sorted, s.Attempts, func(l *Line) string { return string(l.Outcome) }, byCount)
	s.Statuses = counted(sorted, s.Attempts, func(l *Line) string { return strconv.Itoa(l.Status) }, byNumber)
	s.Overall, s.Latency = latencies(sorted)
	s.Retries = retries(sorted)
	s.Queued = queued(sorted)
	s.Keys, s.KeysLeftOut = keys(sorted)
	s.Openings = openings(sorted)
	s.SpendUSD, s.Spend = spend(sorted)
	s.Replays = replays(sorted)
	s.RateLimited = rateLimited(sorted)
	s.OverTime = timeline(sorted)
	return s
}

// counted counts the attempts of lines by key: a folded refusal line
// counts as the attempts it records, a replay as none.
func counted(lines []Line, total int, key func(*Line) string, order func(a, b Count) int) []Count {
	m := map[string]int{}
	for i := range lines {
		if n := attempts(&lines[i]); n > 0 {
			m[key(&lines[i])] += n
		}
	}
	return sortedCounts(m, total, order)
}

// attempts is how many attempts l records: weight(l), and none for a call
// answered from a kept answer, which made no attempt.
func attempts(l *Line) int {
	if l.Outcome == sluice.OutcomeReplayed {
		return 0
	}
	return weight(l)
}

// sortedCounts turns m into Counts of total, in the given order.
func sortedCounts(m map[string]int, total int, order func(a, b Count) int) []Count {
	out := make([]Count, 0, len(m))
	for k, n := range m {
		out = append(out, Count{Key: k, N: n, Share: share(n, total)})
	}
	slices.SortFunc(out, order)
	return out
}

// byCount orders the most frequent first, then by key.
func byCount(a, b Count) int {
	if c := cmp.Compare(b.N, a.N); c != 0 {
		return c
	}
	return cmp.Compare(a.Key, b.Key)
}

// byNumber orders numeric keys ascending, other keys after them by name.
func byNumber(a, b Count) int {
	x, errA := strconv.Atoi(a.Key)
	y, errB := strconv.Atoi(b.Key)
	switch {
	case errA == nil && errB == nil:
		return cmp.Compare(x, y)
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(a.Key, b.Key)
}

// wentUpstream reports whether an attempt reached the provider: every
// outcome but the ones Sluice decides alone, the refusals and the replays
// of kept answers.
func wentUpstream(l Line) bool {
	return !refusal(&l) && l.Outcome != sluice.OutcomeReplayed
}

type pm struct{ provider, model string }

// latencies computes the overall and per provider and model latency and
// time to first byte.
func latencies(lines []Line) (Latency, []Latency) {
	type acc struct{ lat, ttfb []float64 }
	var all acc
	by := map[pm]*acc{}
	for _, l := range lines {
		k := pm{l.Provider, l.Model}
		a := by[k]
		if a == nil {
			a = &acc{}
			by[k] = a
		}
		if wentUpstream(l) {
			a.lat = append(a.lat, l.LatencyMS)
			all.lat = append(all.lat, l.LatencyMS)
		}
		if l.TTFBMS > 0 {
			a.ttfb = append(a.ttfb, l.TTFBMS)
			all.ttfb = append(all.ttfb, l.TTFBMS)
		}
	}
	rows := make([]Latency, 0, len(by))
	for k, a := range by {
		rows = append(rows, Latency{Provider: k.provider, Model: k.model,
			Latency: distOf(a.lat), TTFB: distOf(a.ttfb)})
	}
	slices.SortFunc(rows, func(a, b Latency) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model))
	})
	return Latency{Latency: distOf(all.lat), TTFB: distOf(all.ttfb)}, rows
}

// retries sums the waits chosen after retried attempts.
func retries(lines []Line) Retries {
	var r Retries
	var waits []float64
	after := map[string]int{}
	for _, l := range lines {
		if l.Outcome != "retry" {
			continue
		}
		r.Count++
		r.WaitSumMS = addFinite(r.WaitSumMS, l.RetryInMS)
		waits = append(waits, l.RetryInMS)
		after[cause(l)]++
	}
	d := distOf(waits)
	r.WaitP50MS, r.WaitMaxMS = d.P50, d.Max
	r.After = sortedCounts(after, r.Count, byCount)
	return r
}

// queued sums the waits for rate-limit slots and counts the refusals.
func queued(lines []Line) Queued {
	var q Queued
	var waits []float64
	for _, l := range lines {
		switch {
		case l.Outcome == sluice.OutcomeRateLimited:
		case l.QueuedMS > 0:
			q.Count++
			q.WaitSumMS = addFinite(q.WaitSumMS, l.QueuedMS)
			waits = append(waits, l.QueuedMS)
		}
	}
	q.Refused = countedCalls(lines, func(l *Line) bool { return l.Outcome == sluice.OutcomeRateLimited })
	d := distOf(waits)
	q.WaitP50MS, q.WaitP99MS, q.WaitMaxMS = d.P50, d.P99, d.Max
	q.ByPriority = queuedByPriority(lines)
	return q
}

// spend sums cost_usd, overall and per provider and model.
func spend(lines []Line) (float64, []Spend) {
	var total float64
	by := map[pm]float64{}
	for _, l := range lines {
		if l.CostUSD == 0 {
			continue
		}
		k := pm{l.Provider, l.Model}
		by[k] = addFinite(by[k], l.CostUSD)
		total = addFinite(total, l.CostUSD)
	}
	rows := make([]Spend, 0, len(by))
	for k, usd := range by {
		rows = append(rows, Spend{Provider: k.provider, Model: k.model, USD: usd})
	}
	slices.SortFunc(rows, func(a, b Spend) int {
		return cmp.Or(cmp.Compare(b.USD, a.USD), cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.Model, b.Model))
	})
	return total, rows
}

// answered returns the share of calls answered, and of them those answered
// ok upstream and those replayed from a kept answer.
func (s *Summary) answered() (all, ok, replayed float64) {
	for _, c := range s.CallResults {
		switch sluice.Outcome(c.Key) {
		case sluice.OutcomeOK:
			ok = c.Share
		case sluice.OutcomeReplayed:
			replayed = c.Share
		}
	}
	return ok + replayed, ok, replayed
}
