package gateway

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/limitstats"
	"github.com/sluice-llm/sluice/limit"
)

// codeRateLimited is the error of a call a rate limit refused: its slot
// was further away than its policy's max_queue. 429.
const codeRateLimited = "rate_limited"

// newLimiter returns the Limiter of a config snapshot: its limits.rates
// and each provider's max_concurrent, over the Store every snapshot
// shares, so that a reload keeps every bucket's place, every pause and
// every call in flight. It is there even with no rates, to learn the
// pauses providers ask for.
func newLimiter(cfg *config.Config, store limit.Store) *limit.Limiter {
	limits := slices.Clone(cfg.Limits.Rates)
	for _, name := range slices.Sorted(maps.Keys(cfg.Providers)) {
		if n := cfg.Providers[name].MaxConcurrent; n > 0 {
			limits = append(limits, limit.Limit{Name: config.MaxConcurrentLimit, Provider: name, Scope: "provider", Concurrent: n})
		}
	}
	var longest time.Duration
	for _, p := range cfg.Policies {
		longest = max(longest, p.Timeout.Total)
	}
	// A slot in Redis outlives the longest call a policy allows: only a
	// host that died holding it loses it to the lease.
	return &limit.Limiter{Store: store, Scout: true, Limits: limits, Lease: longest + time.Minute, PromoteAfter: cfg.Limits.PromoteAfter,
		// Some providers count max_tokens at a call's start and correct to
		// the output used; others keep what max_tokens reserved.
		SettlesUnused: func(p string) bool {
			d, ok := dialect.Lookup(cfg.Providers[p].Kind)
			return ok && d.Traits().SettlesUnused
		}}
}

// hasKeyScope reports whether a limit of cfg is scoped per client, as
// scopedByKey does for budgets.
func hasKeyScope(cfg *config.Config) bool {
	return slices.ContainsFunc(cfg.Limits.Rates, func(l limit.Limit) bool { return l.Scope == "key" })
}

// answerRateLimited answers a call a rate limit refused, in the
// provider's shape, with when to try again.
func answerRateLimited(w http.ResponseWriter, d dialect.Dialect, le *limit.Error) {
	w.Header().Set("Retry-After", retryAfterSeconds(time.Now().Add(le.Wait), time.Now()))
	what := "rate limit " + le.Limit
	if le.Limit == "pause" {
		what = "the provider's own rate limit"
	}
	writeError(w, d, http.StatusTooManyRequests, codeRateLimited,
		fmt.Sprintf("sluice: %s is reached; this call's turn was %s away, longer than it may wait", what, le.Wait.Round(time.Millisecond)))
}

// rateLimitErr returns err's *limit.Error, nil when it has none.
func rateLimitErr(err error) *limit.Error {
	var le *limit.Error
	if errors.As(err, &le) {
		return le
	}
	return nil
}

// serveLimits answers GET /sluice/limits: the limits (limits.rates and
// each provider's max_concurrent), the
// buckets and pauses in the store with when each is next free, and this
// process's queue and counts.
func (g *Gateway) serveLimits(w http.ResponseWriter, d dialect.Dialect) {
	v, err := g.limitsView()
	if err != nil {
		writeError(w, d, http.StatusServiceUnavailable, codeStateUnavailable, "sluice: the limits cannot be read: "+err.Error())
		return
	}
	writeJSON(w, v)
}

// limitsView is what GET /sluice/limits answers, and status.json shows:
// the limiter's view, the key pools' learned paces among its buckets.
func (g *Gateway) limitsView() (limitstats.View, error) {
	return limitstats.Read(g.limiter, g.pools.Limiters()...)
}

// limitStoreError logs a failure of the limits' store, after which a call
// is admitted under this process's own buckets and pauses, as an operator
// event (rate-limited, so that an outage of the store does not flood the
// log).
func (sh *shared) limitStoreError(err error) {
	n := sh.limitErrors.Add(1)
	sh.events.StoreError("limits", "rate limits: the state store failed; limits and pauses hold in this process alone meanwhile", err, "errors", n)
}

// pacers are the Limiters that learn paces: the gateway's, then each key
// pool's, by provider.
func (g *Gateway) pacers() []*limit.Limiter {
	return append([]*limit.Limiter{g.limiter}, g.pools.Limiters()...)
}
