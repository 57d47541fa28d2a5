package gateway

import (
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker/filestore"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// BenchmarkFastFail measures the gateway's answer to a call whose
// provider's breaker is open: no upstream call, a 503 in the provider's
// shape, a log line.
func BenchmarkFastFail(b *testing.B) {
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	p := cfg.Policies["interactive"]
	p.Breaker.Failures, p.Breaker.Cool = 1, time.Hour
	cfg.Policies["interactive"] = p
	cfg.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: "http://127.0.0.1:9", MaxConcurrent: 64}
	gw, err := New(cfg, Options{AttemptLog: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	defer gw.Close()
	gw.resetBreaker("x") // no-op; the first call below opens the breaker
	call := func() int {
		req := httptest.NewRequest("POST", "/openai/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini","messages":[]}`))
		req.RemoteAddr = "127.0.0.1:1"
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, req)
		return w.Code
	}
	call() // connection refused: the breaker opens
	if code := call(); code != 503 {
		b.Fatalf("status %d, want 503 from the open breaker", code)
	}
	b.ReportAllocs()
	for b.Loop() {
		call()
	}
}

// BenchmarkForward is one chat call through the gateway to the fake
// provider, the ledger on the file store, without a budget and with one
// daily budget on all traffic: what money costs on the hot path; and
// without a budget while the status page is open, its status.json read
// every 100 ms (the page reads it every 2 s).
func BenchmarkForward(b *testing.B) {
	srv := fake.NewServer("200")
	defer srv.Close()
	srv.Provider.MaxRequests = 100
	for _, name := range []string{"nobudget", "budget", "page-open"} {
		budget, pageOpen := name == "budget", name == "page-open"
		b.Run(name, func(b *testing.B) {
			cfg := config.Default()
			cfg.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: srv.URL, MaxConcurrent: 64}
			if budget {
				cfg.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 1e9, Period: "day", Scope: "all"}}
				cfg.Prices = map[string]spend.Price{"*": {Input: 0.15, Output: 0.6}}
			}
			st, err := filestore.Open(b.TempDir(), filestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ledger, err := spend.NewFileLedger(st.Records())
			if err != nil {
				b.Fatal(err)
			}
			limits, err := limit.NewFile(st.Records())
			if err != nil {
				b.Fatal(err)
			}
			defer limits.Close()
			gw, err := New(cfg, Options{Store: st, Ledger: ledger, Limits: limits, AttemptLog: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			if pageOpen {
				stop := pollStatus(b, gw, 100*time.Millisecond)
				defer stop()
			}
			forwardLoop(b, gw, `{"model":"gpt-4o-mini","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`)
		})
	}
}

// forwardLoop is the loop of the forwarding benchmarks: a chat call of
// body through gw from loopback, answered 200, each iteration.
func forwardLoop(b *testing.B, gw *Gateway, body string) {
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest("POST", "/openai/v1/chat/completions", strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:1"
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// pollStatus reads the gateway's status.json every interval, as an open
// status page does, until the returned stop is called.
func pollStatus(b *testing.B, gw *Gateway, interval time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			req := httptest.NewRequest("GET", "/sluice/status.json", nil)
			req.RemoteAddr = "127.0.0.1:1"
			w := httptest.NewRecorder()
			gw.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Errorf("status.json: %d %s", w.Code, w.Body)
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}
