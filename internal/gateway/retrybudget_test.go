package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
)

// holdingUpstream answers a call's first attempt 503 at once and holds its
// retries until release is closed, so that retrying calls stay in flight.
type holdingUpstream struct {
	mu      sync.Mutex
	seen    map[string]bool // request ids with an attempt made
	held    atomic.Int32
	release chan struct{}
}

func (h *holdingUpstream) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	id := req.Header.Get("X-Request-Id")
	h.mu.Lock()
	retry := h.seen[id]
	h.seen[id] = true
	h.mu.Unlock()
	status := http.StatusServiceUnavailable
	if retry {
		h.held.Add(1)
		select {
		case <-h.release:
			status = http.StatusOK
		case <-req.Context().Done():
			return nil, context.Cause(req.Context())
		}
	}
	return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Request: req, Body: io.NopCloser(strings.NewReader(`{}`))}, nil
}

// budgetConfig routes /a and /b to provider openai, and /c to provider
// backup with openai as its fallback.
func budgetConfig() *config.Config {
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	cfg.Providers = map[string]config.Provider{
		"openai": {Kind: "openai", BaseURL: "http://127.0.0.1:1", MaxConcurrent: 64},
		"backup": {Kind: "openai", BaseURL: "http://127.0.0.1:1", MaxConcurrent: 64},
	}
	cfg.Routes = []config.Route{
		{Prefix: "/a", Provider: "openai", Policy: "interactive"},
		{Prefix: "/b", Provider: "openai", Policy: "nightly"},
		{Prefix: "/c", Provider: "backup", Policy: "interactive", Fallbacks: []config.Target{{Provider: "openai", Model: "gpt-4o-mini"}}},
	}
	pol := func(name string) sluice.Policy {
		p := fastPolicy(name)
		p.Timeout.FirstByte, p.Timeout.Total = 5*time.Second, 10*time.Second
		return p
	}
	cfg.Policies = map[string]sluice.Policy{"interactive": pol("interactive"), "nightly": pol("nightly")}
	return cfg
}

// Calls through two routes (and two policies) to one provider count their
// retries against the provider's one budget: of eight calls failing at
// once, only the budget's floor of three retry; the other five are
// answered at once with the provider's 503.
func TestRetryBudgetSharedByRoutesOfOneProvider(t *testing.T) {
	checkLeaks(t)
	up := &holdingUpstream{seen: map[string]bool{}, release: make(chan struct{})}
	cfg := budgetConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	gw, err := New(cfg, Options{Base: up, AttemptLog: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	var refused atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			path := []string{"/a", "/b"}[i%2] + "/v1/chat/completions"
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(chatBody))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			gw.ServeHTTP(rec, req)
			if rec.Code == http.StatusServiceUnavailable {
				refused.Add(1)
			}
		})
	}
	deadline := time.Now().Add(5 * time.Second)
	for up.held.Load()+refused.Load() < 8 {
		if time.Now().After(deadline) {
			close(up.release)
			wg.Wait()
			t.Fatalf("after 5s: %d retries held, %d refused, want 8 in all", up.held.Load(), refused.Load())
		}
		time.Sleep(time.Millisecond)
	}
	held, gotRefused := up.held.Load(), refused.Load()
	close(up.release)
	wg.Wait()
	if held != 3 || gotRefused != 5 {
		t.Errorf("8 failing calls over 2 routes: %d retried, %d refused; want 3 and 5 (one budget)", held, gotRefused)
	}
}

// Every Transport that calls a provider, as primary or as fallback, holds
// the provider's one budget, and a reload keeps it.
func TestRetryBudgetOnePerProviderAcrossReload(t *testing.T) {
	cfg := budgetConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	gw, err := New(cfg, Options{Base: &holdingUpstream{}, AttemptLog: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	budgets := func() (openai, backup map[*sluice.RetryBudget]bool) {
		openai, backup = map[*sluice.RetryBudget]bool{}, map[*sluice.RetryBudget]bool{}
		for _, rt := range gw.current.Load().routes {
			for _, tr := range rt.transports {
				if rt.provider.name == "openai" {
					openai[tr.RetryBudget] = true
				} else {
					backup[tr.RetryBudget] = true
				}
				for _, tg := range tr.Fallbacks {
					openai[tg.RetryBudget] = true
				}
			}
		}
		return openai, backup
	}
	openai, backup := budgets()
	if len(openai) != 1 || len(backup) != 1 || openai[nil] || backup[nil] {
		t.Fatalf("budgets: openai %v, backup %v; want one non-nil each", openai, backup)
	}
	if err := gw.Reload(func() (*config.Config, error) {
		c := budgetConfig()
		c.Routes = append(c.Routes, config.Route{Prefix: "/d", Provider: "openai", Policy: "interactive"})
		return c, c.Validate()
	}); err != nil {
		t.Fatal(err)
	}
	openai2, backup2 := budgets()
	for b := range openai {
		if len(openai2) != 1 || !openai2[b] {
			t.Errorf("after a reload openai's budgets are %v, want the one before (%p)", openai2, b)
		}
	}
	for b := range backup {
		if len(backup2) != 1 || !backup2[b] {
			t.Errorf("after a reload backup's budgets are %v, want the one before (%p)", backup2, b)
		}
	}
}
