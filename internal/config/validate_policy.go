package config

import (
	"cmp"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/limit"
)

func (c *Config) checkPolicies() error {
	if len(c.Policies) == 0 {
		return errf("policies", "none defined; add one, e.g. interactive: {} for the built-in values")
	}
	return byName(c.Policies, func(name string, p sluice.Policy) error {
		path := key("policies", name)
		return cmp.Or(refuse(!nameRE.MatchString(name), path, "a policy name may hold only letters, digits, '_', '-' and '.'"),
			checkTimeouts(path, p), checkRetry(path, p), checkBreaker(path, p))
	})
}

func checkTimeouts(path string, p sluice.Policy) error {
	t, sec := p.Timeout, key(path, "timeout")
	need := addSat(t.Connect, t.FirstByte)
	return cmp.Or(positive(key(sec, "connect"), t.Connect, "5s"),
		positive(key(sec, "first_byte"), t.FirstByte, "20s"),
		positive(key(sec, "idle"), t.Idle, "15s"),
		positive(key(sec, "total"), t.Total, "30s"),
		refuse(t.Total < need, key(sec, "total"),
			"%v is shorter than connect + first_byte (%v + %v = %v); raise total to at least %v or lower first_byte",
			t.Total, t.Connect, t.FirstByte, need, need),
		refuse(p.MaxQueue < 0, key(path, "max_queue"),
			"%v is negative; write a duration such as 10s, or leave it out for what total leaves after first_byte", p.MaxQueue))
}

func checkRetry(path string, p sluice.Policy) error {
	r, sec := p.Retry, key(path, "retry")
	return cmp.Or(atLeast1(key(sec, "max_attempts"), r.MaxAttempts, "1 = never retry"),
		positive(key(sec, "base"), r.Base, "400ms"),
		positive(key(sec, "cap"), r.Cap, "16s"),
		positive(key(sec, "max_retry_after"), r.MaxRetryAfter, "20s"),
		refuse(r.Cap < r.Base, key(sec, "cap"), "%v is below base %v; raise cap or lower base", r.Cap, r.Base),
		checkStatuses(key(sec, "statuses"), r.Statuses),
		noEmptyMarker(key(sec, "quota_markers"), r.QuotaMarkers, "429"),
		noEmptyMarker(key(sec, "fallback_markers"), r.FallbackMarkers, "error"),
		refuse(r.Budget == 0 || r.Budget > 1 || math.IsNaN(r.Budget), key(sec, "budget"),
			"%v: must be a fraction above 0 and at most 1 (e.g. 0.2 or 20%%), or off", r.Budget))
}

// checkStatuses refuses the first status that is not an HTTP status.
func checkStatuses(path string, statuses []int) error {
	return each(statuses, func(i, s int) error {
		return refuse(s < 100 || s > 599, index(path, i), "%d is not an HTTP status; write statuses from 100 to 599, e.g. 503", s)
	})
}

// noEmptyMarker refuses an empty marker, which would match every error of
// the kind what.
func noEmptyMarker(path string, markers []string, what string) error {
	i := slices.Index(markers, "")
	return refuse(i >= 0, index(path, i), "an empty marker would match every %s; remove it", what)
}

func checkBreaker(path string, p sluice.Policy) error {
	b, sec := p.Breaker, key(path, "breaker")
	slow := key(sec, "slow")
	return cmp.Or(atLeast1(key(sec, "failures"), b.Failures, "e.g. 5"),
		positive(key(sec, "cool"), b.Cool, "30s"),
		oneOf(key(sec, "scope"), "scope", string(p.BreakerScope), string(sluice.ScopeProvider), string(sluice.ScopeModel)),
		refuse(b.Slow.Threshold < 0, key(slow, "threshold"), "%v is negative; write e.g. 15s, or 0s to not track slow calls", b.Slow.Threshold),
		atLeast1(key(slow, "count"), b.Slow.Count, "e.g. 3"),
		positive(key(slow, "window"), b.Slow.Window, "60s"))
}

// checkPriorities checks each policy's priority, limits.promote_after and
// each limit's reserve.
func (c *Config) checkPriorities() error {
	return cmp.Or(byName(c.Policies, func(name string, p sluice.Policy) error {
		return refuse(!slices.Contains([]sluice.Priority{"", sluice.PriorityInteractive, sluice.PriorityBatch}, p.Priority),
			key(key("policies", name), "priority"), "%s: use interactive or batch", quote(string(p.Priority)))
	}), positive("limits.promote_after", c.Limits.PromoteAfter, "30s"), each(c.Limits.Rates, func(i int, l limit.Limit) error {
		return refuse(!(l.Reserve >= 0 && l.Reserve < 1), key(index("limits.rates", i), "reserve"),
			"%s%%: give the share batch calls may never take, from 0%% to below 100%% (write e.g. 20%%)",
			strconv.FormatFloat(l.Reserve*100, 'f', -1, 64))
	}))
}

// addSat adds two non-negative durations, saturating at the largest one.
func addSat(a, b time.Duration) time.Duration {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
