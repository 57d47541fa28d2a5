package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/breaker"
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

// Views lists every breaker of a store, sorted by name.
func Views(store breaker.Store) ([]BreakerView, error) {
	list, err := store.List()
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
		views, err := Views(g.store)
		if err != nil {
			writeError(w, config0, http.StatusServiceUnavailable, codeStateUnavailable, "sluice: the state store failed: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"breakers": views})
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
			writeError(w, config0, http.StatusServiceUnavailable, codeStateUnavailable, "sluice: the state store failed: "+err.Error())
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"name": name, "state": "closed"})
	default:
		writeError(w, config0, http.StatusNotFound, codeNotFound, "sluice: unknown admin endpoint (try /sluice/breakers or /sluice/limits)")
	}
}

// resetBreaker closes the named breaker.
func (g *Gateway) resetBreaker(name string) error {
	list, err := g.store.List()
	if err != nil {
		return err
	}
	if _, ok := list[name]; !ok {
		return &unknownBreakerError{name}
	}
	return breaker.New(name, breaker.Settings{}, g.store).Reset()
}

type unknownBreakerError struct{ name string }

func (e *unknownBreakerError) Error() string {
	return "sluice: no breaker named " + e.name + " (GET /sluice/breakers lists them)"
}
