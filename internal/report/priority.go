package report

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/sluice-llm/sluice"
)

// PriorityQueued is what the attempts of one priority (the log's
// priority field: interactive or batch) waited for a rate-limit or
// concurrency slot.
type PriorityQueued struct {
	Priority string `json:"priority"`
	// Attempts is how many were admitted (sent, or answered from a
	// replay none), Waited how many of them waited at all.
	Attempts int `json:"attempts"`
	Waited   int `json:"waited"`
	// WaitSumMS is their waits summed; the percentiles and max are over
	// every admitted attempt, 0 included.
	WaitSumMS float64 `json:"wait_sum_ms"`
	WaitP50MS float64 `json:"wait_p50_ms"`
	WaitP95MS float64 `json:"wait_p95_ms"`
	WaitMaxMS float64 `json:"wait_max_ms"`
	// Refused is how many calls of the priority a rate limit refused
	// (429 rate_limited).
	Refused int `json:"refused"`
}

// queuedByPriority splits the waits by priority, interactive first; nil
// when no line names a priority (a log written before there were any).
func queuedByPriority(lines []Line) []PriorityQueued {
	by := map[string]*PriorityQueued{}
	waits := map[string][]float64{}
	for _, l := range lines {
		if l.Priority == "" {
			continue
		}
		q := by[l.Priority]
		if q == nil {
			q = &PriorityQueued{Priority: l.Priority}
			by[l.Priority] = q
		}
		switch l.Outcome {
		case sluice.OutcomeRateLimited:
			q.Refused += max(l.Refused, 1)
		case sluice.OutcomeReplayed, sluice.OutcomeCircuitOpen, sluice.OutcomeBudgetExhausted:
		default:
			q.Attempts++
			if l.QueuedMS > 0 {
				q.Waited++
				q.WaitSumMS = addFinite(q.WaitSumMS, l.QueuedMS)
			}
			waits[l.Priority] = append(waits[l.Priority], max(l.QueuedMS, 0))
		}
	}
	var out []PriorityQueued
	for _, q := range by {
		d := distOf(waits[q.Priority])
		q.WaitP50MS, q.WaitP95MS, q.WaitMaxMS = d.P50, d.P95, d.Max
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b PriorityQueued) int { return priorityOrder(a.Priority) - priorityOrder(b.Priority) })
	return out
}

// priorityOrder puts interactive before batch, and any other name after.
func priorityOrder(p string) int {
	switch p {
	case string(sluice.PriorityInteractive):
		return 0
	case string(sluice.PriorityBatch):
		return 1
	}
	return 2
}

// writeQueuedByPriority writes the waits per priority, when the log
// names more than one or any wait.
func writeQueuedByPriority(b *bytes.Buffer, ps []PriorityQueued) {
	for _, p := range ps {
		fmt.Fprintf(b, "  %-11s %d attempts, %d waited, %s in all (p50 %s, p95 %s, max %s); %d refused\n",
			p.Priority, p.Attempts, p.Waited, fmtMS(p.WaitSumMS), fmtMS(p.WaitP50MS), fmtMS(p.WaitP95MS), fmtMS(p.WaitMaxMS), p.Refused)
	}
}
