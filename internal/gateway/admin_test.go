package gateway

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/config"
)

// brokenStore is a breaker store whose every method fails.
type brokenStore struct{}

var errBroken = errors.New("state store unreachable")

func (brokenStore) Load(string) (breaker.Record, error) { return breaker.Record{}, errBroken }
func (brokenStore) Apply(string, breaker.Settings, breaker.Event) (breaker.State, breaker.Record, error) {
	return breaker.Closed, breaker.Record{}, errBroken
}
func (brokenStore) List() (map[string]breaker.Record, error) { return nil, errBroken }

// A failing state store makes the admin endpoints answer 503
// state_unavailable, not an upstream error.
func TestAdminStateStoreFailure(t *testing.T) {
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	gw, err := New(cfg, Options{Store: brokenStore{}})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	for _, tc := range []struct{ method, path string }{
		{"GET", "/sluice/breakers"},
		{"POST", "/sluice/breakers/openai/reset"},
	} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(tc.method, tc.path, nil)
		r.RemoteAddr = "127.0.0.1:1234"
		gw.ServeHTTP(w, r)
		resp := w.Result()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s %s: status %d, want 503", tc.method, tc.path, resp.StatusCode)
		}
		if typ := gatewayError(t, resp, "openai"); typ != "state_unavailable" {
			t.Errorf("%s %s: type %q, want state_unavailable", tc.method, tc.path, typ)
		}
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/sluice/breakers/nope/reset", nil)
	r.RemoteAddr = "127.0.0.1:1234"
	New := func() *Gateway { g, _ := New(cfg, Options{}); return g }
	g := New()
	defer g.Close()
	g.ServeHTTP(w, r)
	if w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "not_found") {
		t.Errorf("an unknown breaker: %d %s, want 404 not_found", w.Code, w.Body)
	}
}
