package check

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
)

// policyRow is one line of the policies table.
type policyRow struct {
	Name          string `json:"name"`
	Attempts      int    `json:"attempts"`
	PerAttempt    int64  `json:"per_attempt_ms"` // connect + first_byte
	Total         int64  `json:"total_ms"`
	WorstCase     int64  `json:"worst_case_ms"`     // worstCase
	Unbounded     int64  `json:"unbounded_ms"`      // worstCaseUnbounded
	CutByTotal    bool   `json:"bounded_by_total"`  // total cuts the schedule short
	WithFallbacks int64  `json:"with_fallbacks_ms"` // the longest route under it, fallbacks included
	MaxQueue      int64  `json:"max_queue_ms"`      // the longest an attempt waits for a rate-limit slot
	Judged        bool   `json:"units_judged,omitempty"`
}

// routeRow is one line of the routes table.
type routeRow struct {
	Prefix     string          `json:"prefix"`
	Provider   string          `json:"provider"`
	Policy     string          `json:"policy"`
	Fallbacks  []config.Target `json:"fallbacks"`
	WorstCase  int64           `json:"worst_case_ms"` // worstCaseRoute
	Unbounded  int64           `json:"unbounded_ms"`  // every target's full schedule, back to back
	CutByTotal bool            `json:"bounded_by_total"`
}

// policyRows returns the policies of c by name, each with its worst case
// alone and with the fallbacks of the routes that use it.
func policyRows(c *config.Config) []policyRow {
	var out []policyRow
	for _, name := range slices.Sorted(maps.Keys(c.Policies)) {
		p := c.Policies[name].WithDefaults()
		row := policyRow{
			Name:       name,
			Attempts:   p.Retry.MaxAttempts,
			PerAttempt: addSat(p.Timeout.Connect, p.Timeout.FirstByte).Milliseconds(),
			Total:      p.Timeout.Total.Milliseconds(),
			WorstCase:  worstCase(c.Policies[name]).Milliseconds(),
			Unbounded:  worstCaseUnbounded(c.Policies[name]).Milliseconds(),
		}
		row.CutByTotal = row.Unbounded > row.Total
		row.MaxQueue = maxQueue(p).Milliseconds()
		row.WithFallbacks = withFallbacks(c, name).Milliseconds()
		out = append(out, row)
	}
	return out
}

// maxQueue is the longest an attempt of p waits for a rate-limit slot, as
// the engine bounds it: max_queue, at most what total leaves after one
// first_byte.
func maxQueue(p sluice.Policy) time.Duration {
	left := max(p.Timeout.Total-p.Timeout.FirstByte, 0)
	if p.MaxQueue > 0 && p.MaxQueue < left {
		return p.MaxQueue
	}
	return left
}

// rateRow is one line of the rate limits table.
type rateRow struct {
	Name              string `json:"name"`
	Provider          string `json:"provider"` // "" for every provider
	Scope             string `json:"scope"`
	RequestsPerMinute int64  `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int64  `json:"tokens_per_minute,omitempty"`
	Concurrent        int    `json:"concurrent,omitempty"`
	SpacingMS         int64  `json:"spacing_ms,omitempty"` // between two calls' starts, by requests
}

// rateRows returns the rate limits of c in the order written.
func rateRows(c *config.Config) []rateRow {
	out := []rateRow{}
	for _, l := range c.Limits.Rates {
		row := rateRow{Name: l.Name, Provider: l.Provider, Scope: l.Scope,
			RequestsPerMinute: l.Requests.Limit, TokensPerMinute: l.Tokens.Limit, Concurrent: l.Concurrent}
		if l.Requests.Limit > 0 {
			row.SpacingMS = (l.Requests.Per / time.Duration(l.Requests.Limit)).Milliseconds()
		}
		out = append(out, row)
	}
	return out
}

// withFallbacks is the worst case of a call under the policy name: alone,
// or on the route using it with the most fallbacks.
func withFallbacks(c *config.Config, name string) time.Duration {
	w := worstCase(c.Policies[name])
	for _, r := range c.Routes {
		if r.Policy == name {
			w = max(w, worstCaseRoute(c, r))
		}
	}
	return w
}

// routeRows returns the routes of c in the order written.
func routeRows(c *config.Config) []routeRow {
	out := make([]routeRow, 0, len(c.Routes))
	for _, r := range c.Routes {
		p := c.Policies[r.Policy]
		unb := mulSat(worstCaseUnbounded(p), 1+len(r.Fallbacks))
		fb := r.Fallbacks
		if fb == nil {
			fb = []config.Target{}
		}
		out = append(out, routeRow{
			Prefix: r.Prefix, Provider: r.Provider, Policy: r.Policy, Fallbacks: fb,
			WorstCase:  worstCaseRoute(c, r).Milliseconds(),
			Unbounded:  unb.Milliseconds(),
			CutByTotal: unb > p.WithDefaults().Timeout.Total,
		})
	}
	return out
}

// mulSat multiplies a non-negative duration by k ≥ 1, saturating.
func mulSat(d time.Duration, k int) time.Duration {
	if d > infinity/time.Duration(k) {
		return infinity
	}
	return d * time.Duration(k)
}

// chooseTarget picks the policy units are judged against: name when
// given (an error when c lacks it), else interactive, else the policy
// with the longest worst case. It returns the policy's name and why it
// was chosen.
func chooseTarget(c *config.Config, name string) (string, string, error) {
	switch {
	case name != "":
		if _, ok := c.Policies[name]; !ok {
			return "", "", fmt.Errorf("--policy %s: the config has no such policy (it has %s)", name, policyList(c))
		}
		return name, "given by --policy", nil
	case len(c.Policies) == 0:
		return "", "", nil
	}
	if _, ok := c.Policies["interactive"]; ok {
		return "interactive", "the default; choose another with --policy", nil
	}
	names := slices.Sorted(maps.Keys(c.Policies))
	best := slices.MaxFunc(names, func(a, b string) int {
		// The first name wins a tie: sorted ascending, so compare b to a.
		return cmp.Or(cmp.Compare(withFallbacks(c, a), withFallbacks(c, b)), cmp.Compare(b, a))
	})
	return best, "the longest, as the config has no interactive policy; choose another with --policy", nil
}

func policyList(c *config.Config) string {
	names := slices.Sorted(maps.Keys(c.Policies))
	if len(names) == 0 {
		return "none"
	}
	s := names[0]
	for _, n := range names[1:] {
		s += ", " + n
	}
	return s
}
