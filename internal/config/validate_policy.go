package config

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/sluice-llm/sluice"
)

func (c *Config) checkPolicies() error {
	if len(c.Policies) == 0 {
		return errf("policies", "none defined; add one, e.g. interactive: {} for the built-in values")
	}
	for _, name := range slices.Sorted(maps.Keys(c.Policies)) {
		path := key("policies", name)
		if !nameRE.MatchString(name) {
			return errf(path, "a policy name may hold only letters, digits, '_', '-' and '.'")
		}
		if err := checkPolicy(path, c.Policies[name]); err != nil {
			return err
		}
	}
	return nil
}

func checkPolicy(path string, p sluice.Policy) error {
	for _, check := range []func(string, sluice.Policy) error{checkTimeouts, checkRetry, checkBreaker} {
		if err := check(path, p); err != nil {
			return err
		}
	}
	return nil
}

// durationKey is one duration of a policy, for checks over several.
type durationKey struct {
	name    string
	v       time.Duration
	example string
}

func checkPositive(section string, ds []durationKey) error {
	for _, d := range ds {
		if err := positive(key(section, d.name), d.v, d.example); err != nil {
			return err
		}
	}
	return nil
}

func checkTimeouts(path string, p sluice.Policy) error {
	t, sec := p.Timeout, key(path, "timeout")
	err := checkPositive(sec, []durationKey{
		{"connect", t.Connect, "5s"}, {"first_byte", t.FirstByte, "20s"},
		{"idle", t.Idle, "15s"}, {"total", t.Total, "30s"},
	})
	if err != nil {
		return err
	}
	if need := addSat(t.Connect, t.FirstByte); t.Total < need {
		return errf(key(sec, "total"), "%v is shorter than connect + first_byte (%v + %v = %v); raise total to at least %v or lower first_byte",
			t.Total, t.Connect, t.FirstByte, need, need)
	}
	if p.MaxQueue < 0 {
		return errf(key(path, "max_queue"), "%v is negative; write a duration such as 10s, or leave it out for what total leaves after first_byte", p.MaxQueue)
	}
	return nil
}

func checkRetry(path string, p sluice.Policy) error {
	r, sec := p.Retry, key(path, "retry")
	if r.MaxAttempts < 1 {
		return errf(key(sec, "max_attempts"), "%d: must be at least 1 (1 = never retry)", r.MaxAttempts)
	}
	err := checkPositive(sec, []durationKey{
		{"base", r.Base, "400ms"}, {"cap", r.Cap, "16s"}, {"max_retry_after", r.MaxRetryAfter, "20s"},
	})
	if err != nil {
		return err
	}
	if r.Cap < r.Base {
		return errf(key(sec, "cap"), "%v is below base %v; raise cap or lower base", r.Cap, r.Base)
	}
	for i, s := range r.Statuses {
		if s < 100 || s > 599 {
			return errf(index(key(sec, "statuses"), i), "%d is not an HTTP status; write statuses from 100 to 599, e.g. 503", s)
		}
	}
	for i, m := range r.QuotaMarkers {
		if m == "" {
			return errf(index(key(sec, "quota_markers"), i), "an empty marker would match every 429; remove it")
		}
	}
	for i, m := range r.FallbackMarkers {
		if m == "" {
			return errf(index(key(sec, "fallback_markers"), i), "an empty marker would match every error; remove it")
		}
	}
	if b := r.Budget; b == 0 || b > 1 || math.IsNaN(b) {
		return errf(key(sec, "budget"), "%v: must be a fraction above 0 and at most 1 (e.g. 0.2 or 20%%), or off", b)
	}
	return nil
}

func checkBreaker(path string, p sluice.Policy) error {
	b, sec := p.Breaker, key(path, "breaker")
	if b.Failures < 1 {
		return errf(key(sec, "failures"), "%d: must be at least 1 (e.g. 5)", b.Failures)
	}
	if err := positive(key(sec, "cool"), b.Cool, "30s"); err != nil {
		return err
	}
	switch p.BreakerScope {
	case sluice.ScopeProvider, sluice.ScopeModel:
	default:
		s := string(p.BreakerScope)
		return errf(key(sec, "scope"), "unknown scope %s%s", quote(s),
			suggest(s, []string{string(sluice.ScopeProvider), string(sluice.ScopeModel)}))
	}
	slow := key(sec, "slow")
	if b.Slow.Threshold < 0 {
		return errf(key(slow, "threshold"), "%v is negative; write e.g. 15s, or 0s to not track slow calls", b.Slow.Threshold)
	}
	if b.Slow.Count < 1 {
		return errf(key(slow, "count"), "%d: must be at least 1 (e.g. 3)", b.Slow.Count)
	}
	return positive(key(slow, "window"), b.Slow.Window, "60s")
}
