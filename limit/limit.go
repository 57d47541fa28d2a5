package limit

import (
	"fmt"
	"strings"
)

// Limit is one configured limit: a budget of requests and one of tokens per
// bucket, and a number of calls in flight, for each value of its Scope.
type Limit struct {
	// Name names the limit in keys, errors and metrics. It is required
	// and holds no ':'.
	Name string

	// Provider is the provider whose calls the limit covers. If "", it
	// covers every provider.
	Provider string

	// Scope says which calls share a bucket: "provider" (the calls to one
	// provider), "model" (to one provider's model), "key" (of one client,
	// as Limiter.Client names it) or "all" (every call the limit covers).
	// If "", "provider" is used.
	Scope string

	// Requests is how many calls may start per window. If its Limit is
	// zero, calls are not counted.
	Requests Rate

	// Tokens is how many tokens calls may use per window, a call's
	// estimate being bodyBytes/4 + maxTokens until it settles with what
	// it used. If its Limit is zero, tokens are not counted.
	Tokens Rate

	// Concurrent is how many calls may be in flight at once (from Wait
	// until done) under each value of the scope, in everything sharing
	// the Store. A call that finds them all taken queues for one. If
	// zero, calls in flight are not counted.
	Concurrent int

	// Reserve is the share of the limit (0.2: 20%) that Batch calls may
	// never take: of Requests and Tokens, the share of each window; of
	// Concurrent, that share of the slots, rounded down. Interactive calls
	// may take all of it. If zero, Batch calls may take the whole limit.
	Reserve float64
}

// Check returns an error naming what is wrong with l, nil if nothing is.
func (l Limit) Check() error {
	switch {
	case l.Name == "" || strings.Contains(l.Name, ":"):
		return fmt.Errorf("limit: limit name %q: give each limit a name without ':'", l.Name)
	case l.Scope != "" && l.Scope != "provider" && l.Scope != "model" && l.Scope != "key" && l.Scope != "all":
		return fmt.Errorf("limit: limit %s: scope %q: use provider, model, key or all", l.Name, l.Scope)
	case l.Concurrent < 0 || l.Concurrent > maxCount:
		return fmt.Errorf("limit: limit %s: concurrent %d: give 0 (no limit) to %d calls in flight", l.Name, l.Concurrent, maxCount)
	case !(l.Reserve >= 0 && l.Reserve < 1):
		return fmt.Errorf("limit: limit %s: reserve %v: give a share from 0 up to below 100%%", l.Name, l.Reserve)
	}
	for _, r := range []struct {
		what string
		r    Rate
	}{{"requests", l.Requests}, {"tokens", l.Tokens}} {
		if r.r.Limit < 0 || r.r.Per < 0 || (r.r.Limit > 0 && r.r.Per == 0) {
			return fmt.Errorf("limit: limit %s: %s %d per %v: give a limit ≥ 0 and a period > 0", l.Name, r.what, r.r.Limit, r.r.Per)
		}
	}
	return nil
}

// PauseKey returns the key of the pause and learned bucket of provider's
// model: "pause:<provider>/<model>".
func PauseKey(provider, model string) string { return "pause:" + provider + "/" + model }

// SharedPauseKey returns the key of the pause and learned bucket of a
// provider whose limits its models share (Limiter.SharedLimits):
// "pause:<provider>".
func SharedPauseKey(provider string) string { return "pause:" + provider }

// PaceKey returns the key of the bucket of the pace learned for the pause
// key pause (see Pace): "pace:<provider>/<model>" for "pause:<provider>/<model>".
func PaceKey(pause string) string { return "pace:" + strings.TrimPrefix(pause, "pause:") }
