package report

import "github.com/sluice-llm/sluice"

// Replays counts the calls answered from the answer kept for their
// Idempotency-Key (outcome replayed), with no upstream call.
type Replays struct {
	// Calls is how many calls were replayed.
	Calls int `json:"calls"`
	// SavedUSD is what the replayed answers cost when first made, as far
	// as the log holds the first calls or the replays' lines say it
	// (saved_usd): the money the replays did not spend again.
	SavedUSD float64 `json:"saved_usd"`
	// Unpriced is how many replays name a first call the log does not
	// hold (kept before the log's window, or by another gateway's log)
	// and whose line does not say what it cost.
	Unpriced int `json:"unpriced,omitempty"`
}

// replays counts the replayed calls among lines, each priced at the cost
// of the call it replayed.
func replays(lines []Line) Replays {
	cost := map[string]float64{}
	seen := map[string]bool{}
	for _, l := range lines {
		if l.Outcome != sluice.OutcomeReplayed && l.RequestID != "" {
			cost[l.RequestID] = addFinite(cost[l.RequestID], l.CostUSD)
			seen[l.RequestID] = true
		}
	}
	var r Replays
	for _, l := range lines {
		if l.Outcome != sluice.OutcomeReplayed {
			continue
		}
		r.Calls++
		switch {
		case seen[l.ReplayOf]:
			r.SavedUSD = addFinite(r.SavedUSD, cost[l.ReplayOf])
		case l.SavedUSD > 0: // the first call's lines are gone (rotated), its cost is on this one
			r.SavedUSD = addFinite(r.SavedUSD, l.SavedUSD)
		default:
			r.Unpriced++
		}
	}
	return r
}
