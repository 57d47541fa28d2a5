package gateway

import (
	_ "embed"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/sluice-llm/sluice/internal/history"
	"github.com/sluice-llm/sluice/internal/keypool"
	"github.com/sluice-llm/sluice/internal/limitstats"
)

// statusPage is GET /sluice/: one self-contained page (inline CSS and
// script, no external asset) that polls status.json every 2 s.
//
//go:embed status.html
var statusPage []byte

// statusView is what GET /sluice/status.json answers: the state of every
// guard now, and the last hour of every provider and model.
type statusView struct {
	Now      time.Time     `json:"now"`
	State    stateView     `json:"state"`
	Breakers []BreakerView `json:"breakers"`
	// BreakersError says why the breakers are missing: the state store
	// failed.
	BreakersError string            `json:"breakers_error,omitempty"`
	Series        []history.Series  `json:"series"`
	Limits        *limitstats.View  `json:"limits,omitempty"`
	LimitsError   string            `json:"limits_error,omitempty"`
	Keys          []keypool.View    `json:"keys"`
	Budgets       []budgetView      `json:"budgets"`
	Replays       replaysView       `json:"replays"`
	Hedges        hedgesView        `json:"hedges"`
	Failures      []history.Failure `json:"failures"`
}

// stateView is the state store: which one, and whether the breakers are
// shared through it now.
type stateView struct {
	// Store names it as the start line does: "memory", "file:DIR", a Redis
	// URL without its password, "redis-sentinel master=… sentinels=…",
	// "redis-cluster nodes=…".
	Store string `json:"store"`
	// Degraded is true while the breakers count in this process alone
	// (sluice_state_store_degraded 1); Error then says why, as the store
	// gave it.
	Degraded bool   `json:"degraded"`
	Error    string `json:"error,omitempty"`
}

// stateOf is the state store g's breakers are kept in.
func (g *Gateway) stateOf() stateView {
	v := stateView{Store: g.cfg.StateWhere()}
	if d, ok := g.store.(degradable); ok && d.Degraded() {
		v.Degraded = true
		if e, ok := g.store.(interface{ Err() error }); ok && e.Err() != nil {
			v.Error = e.Err().Error()
		}
	}
	return v
}

// replaysView counts the last hour's calls answered from a kept answer
// (Idempotency-Key), and the dollars their first calls cost: what the
// replays did not spend again.
type replaysView struct {
	Calls    uint32  `json:"calls"`
	SavedUSD float64 `json:"saved_usd"`
}

// hedgesView is the last hour's hedging (policy hedge), over every
// provider and model: the calls begun, the hedges sent, won (the hedge
// answered first) and refused, and the hedge rate, sent per call.
type hedgesView struct {
	Calls uint64 `json:"calls"`
	history.Hedges
	Rate float64 `json:"rate"`
}

// budgetView is a budget's current period: what is spent, held by calls
// in flight, and left.
type budgetView struct {
	Name     string    `json:"name"`
	Scope    string    `json:"scope"`
	Of       string    `json:"of,omitempty"` // the provider or model of a scoped budget
	LimitUSD float64   `json:"limit_usd"`
	SpentUSD float64   `json:"spent_usd"`
	HeldUSD  float64   `json:"held_usd"`
	LeftUSD  float64   `json:"left_usd"`
	Resets   time.Time `json:"resets"`
	Error    string    `json:"error,omitempty"`
}

// serveStatusPage answers GET /sluice/ with the page.
func (g *Gateway) serveStatusPage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, config0, http.StatusMethodNotAllowed, codeMethodNotAllowed, "sluice: use GET")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// The page may reach nothing but this gateway, is framed by no one,
	// and never sends its address (which may hold ?token=) elsewhere.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "+
		"img-src data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	w.Write(statusPage)
}

// serveStatus answers GET /sluice/status.json. A part that cannot be read
// (the state store down) is left out with its error; the rest is served.
func (g *Gateway) serveStatus(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, config0, http.StatusMethodNotAllowed, codeMethodNotAllowed, "sluice: use GET")
		return
	}
	now := time.Now()
	v := statusView{Now: now.UTC(), Breakers: []BreakerView{}, Keys: g.pools.Views(now)}
	if b, err := Views(g.store, g.breakerNames); err != nil {
		v.BreakersError = "the state store failed: " + err.Error()
	} else {
		v.Breakers = b
	}
	v.State = g.stateOf()
	if l, err := g.limitsView(); err != nil {
		v.LimitsError = "the limits cannot be read: " + err.Error()
	} else {
		v.Limits = &l
	}
	v.Series, v.Failures = g.history.Snapshot(now)
	v.Budgets = g.budgetViews(now, v.Series)
	for _, s := range v.Series {
		v.Replays.Calls += s.Hour.Classes[history.ClassReplayed]
		v.Replays.SavedUSD += s.Hour.SavedUSD
		v.Hedges.Calls += s.Hour.Calls
		v.Hedges.Add(s.Hour.Hedges)
	}
	if v.Hedges.Calls > 0 {
		v.Hedges.Rate = float64(v.Hedges.Sent) / float64(v.Hedges.Calls)
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// budgetViews reads every budget's current period: a budget scoped "all"
// once, one scoped per provider for each configured provider, one scoped
// per model for each model of the hour's series. Budgets scoped per
// client key are left out: one line per client is not a status.
func (g *Gateway) budgetViews(now time.Time, series []history.Series) []budgetView {
	out := []budgetView{}
	if g.spend == nil {
		return out
	}
	for i := range g.spend.Budgets {
		b := &g.spend.Budgets[i]
		var of []string
		switch b.Scope {
		case "", "all":
			of = []string{""}
		case "provider":
			of = slices.Sorted(maps.Keys(g.providers))
		case "model":
			seen := map[string]bool{}
			for _, s := range series {
				if s.Model != "" && s.Model != history.Other && !seen[s.Model] {
					seen[s.Model] = true
					of = append(of, s.Model)
				}
			}
			slices.Sort(of)
		}
		for _, name := range of {
			var key string
			var resets time.Time
			if b.Scope == "provider" {
				key, resets = b.Key(now, "", "", name)
			} else {
				key, resets = b.Key(now, "", name, "")
			}
			bv := budgetView{Name: b.Name, Scope: b.Scope, Of: name, LimitUSD: b.LimitUSD, Resets: resets.UTC()}
			if bv.Scope == "" {
				bv.Scope = "all"
			}
			spent, held, err := g.ledger.Read(key)
			if err != nil {
				bv.Error = "the ledger cannot be read: " + err.Error()
			}
			bv.SpentUSD, bv.HeldUSD, bv.LeftUSD = spent, held, b.LimitUSD-spent-held
			out = append(out, bv)
		}
	}
	return out
}
