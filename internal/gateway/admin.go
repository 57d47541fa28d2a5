package gateway

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/config"
)

func (g *Gateway) serveHealth(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write([]byte(`{"status":"ok"}` + "\n"))
}

// BreakerView is one breaker as GET /sluice/breakers shows it.
type BreakerView struct {
	Name        string    `json:"name"`
	State       string    `json:"state"`
	Failures    int       `json:"failures"`
	Reason      string    `json:"reason,omitempty"`
	Until       time.Time `json:"until,omitzero"`
	Changed     time.Time `json:"changed,omitzero"`
	Transitions uint64    `json:"transitions"`
}

// Views lists the breakers of a store, sorted by name, with every name of
// known the store holds no record of shown closed: a breaker that has
// never counted a failure or a slow call keeps no record
// (breaker.Record.Idle), yet guards its provider like any other.
func Views(store breaker.Store, known []string) ([]BreakerView, error) {
	list, err := records(store, known)
	if err != nil {
		return nil, err
	}
	out := make([]BreakerView, 0, len(list))
	for _, name := range breaker.Names(list) {
		r := list[name]
		v := BreakerView{Name: name, State: r.State.String(), Failures: r.Failures, Reason: r.Reason, Transitions: r.Transitions}
		if r.State != breaker.Closed && r.Until != 0 {
			v.Until = time.Unix(0, r.Until).UTC()
		}
		if r.Changed != 0 {
			v.Changed = time.Unix(0, r.Changed).UTC()
		}
		out = append(out, v)
	}
	return out, nil
}

// knownBreakers returns the breaker names of the current config, for the
// metrics: nil before the first config is in place.
func (sh *shared) knownBreakers() []string {
	if g := sh.current.Load(); g != nil {
		return g.breakerNames
	}
	return nil
}

// records returns the store's records by name, and the record of every
// name of known the list left out, read by name: the zero Record, a closed
// breaker's, when it has none; or one the list could not find (a Redis
// record an older release wrote, before breakers were registered).
func records(store breaker.Store, known []string) (map[string]breaker.Record, error) {
	list, err := store.List()
	if err != nil {
		return nil, err
	}
	for _, name := range known {
		if _, ok := list[name]; !ok {
			r, err := store.Load(name)
			if err != nil {
				return nil, err
			}
			if list == nil {
				list = make(map[string]breaker.Record)
			}
			list[name] = r
		}
	}
	return list, nil
}

// BreakerNames returns the names of the breakers cfg's routes use that
// are known before any call: every provider a route or a fallback
// reaches, under a policy whose breakers are per provider; every
// fallback's provider and model, under a policy whose breakers are per
// model (a primary's model is the one each client names). Sorted.
func BreakerNames(cfg *config.Config) []string {
	seen := make(map[string]bool)
	for _, pol := range cfg.Policies {
		byModel := pol.BreakerScope == sluice.ScopeModel
		for _, r := range cfg.Routes {
			if !byModel {
				seen[pol.BreakerName(r.Provider, "")] = true
			}
			for _, f := range r.Fallbacks {
				if !byModel || f.Model != "" {
					seen[pol.BreakerName(f.Provider, f.Model)] = true
				}
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

func (g *Gateway) serveAdmin(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/metrics":
		g.metrics.handler.ServeHTTP(w, r)
	case p == "/sluice/breakers":
		if r.Method != http.MethodGet {
			writeError(w, config0, http.StatusMethodNotAllowed, codeMethodNotAllowed, "sluice: use GET")
			return
		}
		views, err := Views(g.store, g.breakerNames)
		if err != nil {
			writeStateFailed(w, err)
			return
		}
		writeJSON(w, map[string]any{"breakers": views, "state": g.stateOf()})
	case p == "/sluice/":
		g.serveStatusPage(w, r)
	case p == "/sluice/status.json":
		g.serveStatus(w, r)
	case p == "/sluice/limits":
		if r.Method != http.MethodGet {
			writeError(w, config0, http.StatusMethodNotAllowed, codeMethodNotAllowed, "sluice: use GET")
			return
		}
		g.serveLimits(w, config0)
	case p == "/sluice/keys" || strings.HasPrefix(p, "/sluice/keys/"):
		g.serveKeys(w, r)
	case strings.HasPrefix(p, "/sluice/breakers/") && strings.HasSuffix(p, "/reset"):
		if r.Method != http.MethodPost {
			writeError(w, config0, http.StatusMethodNotAllowed, codeMethodNotAllowed, "sluice: use POST")
			return
		}
		name := strings.TrimSuffix(strings.TrimPrefix(p, "/sluice/breakers/"), "/reset")
		var unknown *unknownBreakerError
		if err := g.resetBreaker(name); errors.As(err, &unknown) {
			writeError(w, config0, http.StatusNotFound, codeNotFound, err.Error())
			return
		} else if err != nil {
			writeStateFailed(w, err)
			return
		}
		writeJSON(w, map[string]string{"name": name, "state": "closed"})
	default:
		writeError(w, config0, http.StatusNotFound, codeNotFound, "sluice: unknown admin endpoint (try /sluice/breakers or /sluice/limits)")
	}
}

// writeJSON answers 200 with v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// writeStateFailed answers an admin request whose state store failed with
// err: 503 state_unavailable.
func writeStateFailed(w http.ResponseWriter, err error) {
	writeError(w, config0, http.StatusServiceUnavailable, codeStateUnavailable, "sluice: the state store failed: "+err.Error())
}

// resetBreaker closes the named breaker.
func (g *Gateway) resetBreaker(name string) error {
	list, err := records(g.store, g.breakerNames)
	if err != nil {
		return err
	}
	if _, ok := list[name]; !ok {
		return &unknownBreakerError{name}
	}
	return breaker.New(name, breaker.Settings{OnStateChange: g.events.BreakerChanged}, g.store).Reset()
}

type unknownBreakerError struct{ name string }

func (e *unknownBreakerError) Error() string {
	return "sluice: no breaker named " + e.name + " (GET /sluice/breakers lists them)"
}
