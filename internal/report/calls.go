package report

import (
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-llm/sluice"
)

// anonymous starts the key of a call the log does not name: no request id
// starts with a NUL.
const anonymous = "\x00"

// weight is how many attempts l records, and so how many calls it stands
// for when it is a refusal line: the refused calls it counts (or lists,
// if more), else one.
func weight(l *Line) int { return max(l.Refused, len(l.RefusedIDs), 1) }

// callsOf calls fn once for every attempt l records (weight(l) times),
// with the key of the call it belongs to. It is the one place that decides
// what a call is, and every figure that counts calls asks it:
//
//   - a line's request_id names its call; a line without one is a call of
//     its own;
//   - a refusal line folded by the attempt log (refused N) stands for N
//     refused calls: those its refused_ids list, then, for each refusal
//     it counts beyond them (a line written before the log listed the
//     ids names only its own request_id), a call of its own.
//
// listed is true for a refusal that a folded line counts under another
// call than its own (the line's request_id, the last of its refused_ids):
// its attempt number and time are the line's, not its own. unnamed numbers the calls the log does not name.
func callsOf(l *Line, unnamed *int, fn func(key string, listed bool)) {
	ids := l.RefusedIDs
	n := weight(l)
	for i := range n {
		id := ""
		switch {
		case i < len(ids):
			id = ids[i]
		case i == 0:
			id = l.RequestID
		}
		if id == "" {
			*unnamed++
			id = anonymous + strconv.Itoa(*unnamed)
		}
		fn(id, id != l.RequestID)
	}
}

// callRec is one call as the log tells it.
type callRec struct {
	key string
	// upstream counts the call's attempts that went upstream: what its
	// Sluice-Attempts header said.
	upstream int
	// own is the call's own line with the highest attempt number (the
	// latest of equals); listed the latest folded refusal line that counts
	// the call under another id than its own; up the own line with the
	// highest attempt number of those that went upstream.
	own, listed, up *Line
}

// end is the attempt the call ended on. Attempt numbers run on across a
// call's retries, refusals and fallbacks, so it is the call's own line
// with the highest number. A refusal listed by a folded line has no number
// of its own: it ends the call when the call's own lines end on none or on
// a retried attempt, which only a later attempt follows. Otherwise the own
// line ends it: in its call, only a fallback's attempts follow a refusal,
// and they are own lines.
func (c *callRec) end() *Line {
	if c.listed != nil && (c.own == nil || c.own.Outcome == sluice.OutcomeRetry) {
		return c.listed
	}
	return c.own
}

// answer is the attempt whose answer the call returned, and the call's
// result: the outcome of the attempt it ended on (end), except when that
// attempt was refused without being sent (circuit_open, budget_exhausted,
// rate_limited) after an attempt of the call went upstream. The caller
// then got that attempt's answer, the last one upstream (the provider's
// 503, with its x-request-id, or the gateway's 504 for its timeout), and
// the call's result is that answer's: fail, or timeout when no response
// came and the attempt timed out.
func (c *callRec) answer() (*Line, string) {
	e := c.end()
	if refusal(e) && c.up != nil {
		l := c.up
		switch {
		case l.Outcome != sluice.OutcomeRetry:
			return l, string(l.Outcome)
		case l.Status == 0 && strings.HasPrefix(l.Error, "timeout"):
			return l, string(sluice.OutcomeTimeout)
		}
		return l, string(sluice.OutcomeFail)
	}
	return e, string(e.Outcome)
}

// refusal reports whether l is an attempt refused before it was sent.
func refusal(l *Line) bool {
	return l.Outcome == sluice.OutcomeCircuitOpen || l.Outcome == sluice.OutcomeBudgetExhausted ||
		l.Outcome == sluice.OutcomeRateLimited
}

// callEnd is a call and the answer it returned.
type callEnd struct {
	// id is the call's request id; "" when the log does not name it.
	id string
	// upstream counts its attempts that went upstream (Sluice-Attempts).
	upstream int
	// last is the attempt whose answer the call returned, result the
	// call's result (see callRec.answer).
	last   *Line
	result string
}

// groupCalls returns the calls of lines, sorted by time, in the order of
// their ends in time.
func groupCalls(lines []Line) []callEnd {
	by := map[string]*callRec{}
	var order []*callRec
	unnamed := 0
	for i := range lines {
		l := &lines[i]
		callsOf(l, &unnamed, func(key string, listed bool) {
			c := by[key]
			if c == nil {
				c = &callRec{key: key}
				by[key] = c
				order = append(order, c)
			}
			switch {
			case listed:
				c.listed = l
			case c.own == nil || l.Attempt >= c.own.Attempt:
				c.own = l
			}
			if !listed && wentUpstream(*l) {
				c.upstream++
				if c.up == nil || l.Attempt >= c.up.Attempt {
					c.up = l
				}
			}
		})
	}
	out := make([]callEnd, len(order))
	for i, c := range order {
		id := c.key
		if id[0] == anonymous[0] {
			id = ""
		}
		last, result := c.answer()
		out[i] = callEnd{id: id, upstream: c.upstream, last: last, result: result}
	}
	slices.SortStableFunc(out, func(a, b callEnd) int { return a.last.TS.Compare(b.last.TS) })
	return out
}

// perCall is the distribution of upstream attempts per call, and the calls
// by their result.
func perCall(ends []callEnd, upstream int) (PerCall, []Count) {
	pc := PerCall{Mean: share(upstream, len(ends))}
	hist := map[string]int{}
	results := map[string]int{}
	for _, c := range ends {
		pc.Max = max(pc.Max, c.upstream)
		hist[strconv.Itoa(c.upstream)]++
		results[c.result]++
	}
	pc.Hist = sortedCounts(hist, len(ends), byNumber)
	return pc, sortedCounts(results, len(ends), byCount)
}

// countedCalls counts the distinct calls of the attempts of lines that
// keep says to count.
func countedCalls(lines []Line, keep func(*Line) bool) int {
	seen := map[string]bool{}
	unnamed := 0
	for i := range lines {
		if l := &lines[i]; keep(l) {
			callsOf(l, &unnamed, func(key string, _ bool) { seen[key] = true })
		}
	}
	return len(seen)
}
