package report

import (
	"cmp"
	"slices"
	"time"

	"github.com/sluice-llm/sluice"
)

// Opening is one stretch of time during which a provider's breaker was seen
// open. It is derived from the breaker state each attempt logged when it
// started: the first attempt that saw "open" after "closed" or "half_open"
// starts an opening, and the first later attempt that saw "closed" ends it.
type Opening struct {
	Provider string `json:"provider"`
	// Start is the time of the first attempt that saw the breaker open.
	Start time.Time `json:"start"`
	// End is the time of the first later attempt that saw it closed; zero
	// when the log ends first (Ongoing).
	End     time.Time `json:"end"`
	Ongoing bool      `json:"ongoing"`
	// DurationMS is End−Start, or the last attempt of the log − Start when
	// Ongoing.
	DurationMS float64 `json:"duration_ms"`
	// FastFails counts attempts with outcome circuit_open during the
	// opening (a folded line as the refusals it counts); CallsFailedFast
	// the distinct calls among them, counted as every figure counts calls.
	FastFails       int `json:"fast_fails"`
	CallsFailedFast int `json:"calls_failed_fast"`
	// Probes are the times of attempts that saw the breaker half open;
	// FailedProbes counts those whose outcome was not ok.
	Probes       []time.Time `json:"probes"`
	FailedProbes int         `json:"failed_probes"`
	// Before counts how the attempts just before the opening (at most
	// whyWindow, same provider) ended, by status or error class: the why.
	Before []Count `json:"before"`
}

// whyWindow is how many attempts before an opening explain it; it matches
// the default breaker threshold of five consecutive failures.
const whyWindow = 5

// breakerTrack is the state of one provider while walking the log.
type breakerTrack struct {
	recent  []Line
	cur     *Opening
	calls   map[string]bool
	unnamed int // numbers the calls the log does not name (callsOf)
}

// openings walks lines, sorted by time, and returns the breaker openings
// of every provider by start time.
func openings(lines []Line) []Opening {
	var out []Opening
	tracks := map[string]*breakerTrack{}
	for _, l := range lines {
		t := tracks[l.Provider]
		if t == nil {
			t = &breakerTrack{}
			tracks[l.Provider] = t
		}
		switch {
		case t.cur == nil && l.Breaker == "open":
			t.start(l)
		case t.cur != nil && l.Breaker == "closed":
			out = append(out, t.end(l.TS, false))
		}
		t.observe(l)
	}
	if len(lines) > 0 {
		last := lines[len(lines)-1].TS
		for _, t := range tracks {
			if t.cur != nil {
				out = append(out, t.end(last, true))
			}
		}
	}
	slices.SortFunc(out, func(a, b Opening) int {
		return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.Provider, b.Provider))
	})
	return out
}

// start begins an opening at l, explained by the recent attempts.
func (t *breakerTrack) start(l Line) {
	why := map[string]int{}
	for _, r := range t.recent {
		why[cause(r)]++
	}
	t.cur = &Opening{Provider: l.Provider, Start: l.TS, Probes: []time.Time{},
		Before: sortedCounts(why, len(t.recent), byCount)}
	t.calls = map[string]bool{}
	t.recent = t.recent[:0]
}

// end closes the current opening at ts and returns it.
func (t *breakerTrack) end(ts time.Time, ongoing bool) Opening {
	o := *t.cur
	o.Ongoing = ongoing
	if !ongoing {
		o.End = ts
	}
	o.DurationMS = float64(ts.Sub(o.Start)) / float64(time.Millisecond)
	o.CallsFailedFast = len(t.calls)
	t.cur, t.calls = nil, nil
	return o
}

// observe records l in the current opening, or among the recent attempts
// when there is none.
func (t *breakerTrack) observe(l Line) {
	if t.cur == nil {
		if len(t.recent) == whyWindow {
			t.recent = append(t.recent[:0], t.recent[1:]...)
		}
		t.recent = append(t.recent, l)
		return
	}
	if l.Outcome == sluice.OutcomeCircuitOpen {
		callsOf(&l, &t.unnamed, func(key string, _ bool) {
			t.cur.FastFails++
			t.calls[key] = true
		})
		return // a refusal is no probe, whatever state refused it
	}
	if l.Breaker == "half_open" {
		t.cur.Probes = append(t.cur.Probes, l.TS)
		if l.Outcome != sluice.OutcomeOK {
			t.cur.FailedProbes++
		}
	}
}
