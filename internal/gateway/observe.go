package gateway

import (
	"github.com/sluice-llm/sluice"
)

// observer returns the Observe hook of a route's Transport under policy
// pol: every attempt goes to the metrics and the status page's history; a
// refused one to the operator events too; a replay to the replays' count,
// and what became of a kept answer to the answers' metrics.
func (g *Gateway) observer(rt *route, pol *sluice.Policy) func(*sluice.Attempt) {
	return func(a *sluice.Attempt) {
		if a.Outcome == sluice.OutcomeReplayed {
			g.answers.replayed(rt.prefix, a)
			g.history.Observe(a)
			return
		}
		g.answers.observe(a, g.events)
		g.metrics.observe(a)
		g.limitMetrics.Observe(a)
		g.history.Observe(a)
		if answeredByFallback(a) {
			g.metrics.fallback(rt.prefix, a.Provider)
		}
		if a.Outcome == sluice.OutcomeCircuitOpen || a.Outcome == sluice.OutcomeRateLimited {
			g.events.Refused(pol, a)
		}
	}
}

// answeredByFallback reports whether a is the last attempt of a call that
// a route's fallback answered, whatever its status: the engine's own
// account of the target, so a fallback to another model of the same
// provider (a breaker scoped per model) counts as one to another provider
// does.
func answeredByFallback(a *sluice.Attempt) bool {
	return a.Target > 0 && a.Status != 0 && a.Outcome != sluice.OutcomeRetry
}
