package gateway

import (
	"net/http"

	"github.com/sluice-llm/sluice"
)

// observer returns the Observe hook of a route's Transport under policy
// pol: every attempt goes to the metrics and the status page's history; a
// refused one to the operator events too.
func (g *Gateway) observer(rt *route, pol *sluice.Policy) func(*sluice.Attempt) {
	return func(a *sluice.Attempt) {
		g.metrics.observe(a)
		g.limitMetrics.observe(a)
		g.history.observe(a)
		if a.Outcome == sluice.OutcomeCircuitOpen || a.Outcome == sluice.OutcomeRateLimited {
			g.events.refused(pol, a)
		}
	}
}

// countFallback counts a call answered by a route's fallback: one whose
// answer says (Sluice-Provider, Sluice-Model) that another provider, or
// another model of the same provider, answered than the primary target
// the call was sent to, the route's provider and model.
//
// The engine names the target that answered only in the answer's
// headers, which it stamps for the client; comparing both the provider
// and the model is what tells a fallback to another model of the same
// provider (a breaker scoped per model) from the primary.
func (g *Gateway) countFallback(rt *route, model string, resp *http.Response) {
	p := resp.Header.Get("Sluice-Provider")
	if p == "" {
		return
	}
	if p != rt.provider.name || resp.Header.Get("Sluice-Model") != model {
		g.metrics.fallback(rt.prefix, p)
	}
}
