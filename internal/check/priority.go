package check

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
)

// prioritiesRow is what `sluice check` says of priorities: which policies
// are batch, when a batch call goes as interactive, and what each limit
// reserves from batch calls.
type prioritiesRow struct {
	Batch          []string           `json:"batch_policies"`
	PromoteAfterMS int64              `json:"promote_after_ms"`
	Reserves       map[string]float64 `json:"reserves,omitempty"` // by limit name
}

// prioritiesOf returns c's priorities.
func prioritiesOf(c *config.Config) prioritiesRow {
	r := prioritiesRow{Batch: []string{}, PromoteAfterMS: c.Limits.PromoteAfter.Milliseconds()}
	for _, name := range slices.Sorted(maps.Keys(c.Policies)) {
		if c.Policies[name].WithDefaults().Priority == sluice.PriorityBatch {
			r.Batch = append(r.Batch, name)
		}
	}
	for _, l := range c.Limits.Rates {
		if l.Reserve > 0 {
			if r.Reserves == nil {
				r.Reserves = map[string]float64{}
			}
			r.Reserves[l.Name] = l.Reserve
		}
	}
	return r
}

// prioritiesText writes what r.Priorities says.
func (r *report) prioritiesText(w io.Writer) {
	p := r.Priorities
	fmt.Fprintln(w, "\nPriorities: where calls wait for a slot, interactive calls go before batch ones (a request's Sluice-Priority overrides its policy's)")
	batch := "none"
	if len(p.Batch) > 0 {
		batch = strings.Join(p.Batch, ", ")
	}
	fmt.Fprintf(w, "  batch policies: %s; a batch call that has waited %s goes as interactive\n", batch, ms(p.PromoteAfterMS))
	for _, name := range slices.Sorted(maps.Keys(p.Reserves)) {
		fmt.Fprintf(w, "  limit %s: %s%% reserved from batch calls\n", name, strconv.FormatFloat(p.Reserves[name]*100, 'f', -1, 64))
	}
}
