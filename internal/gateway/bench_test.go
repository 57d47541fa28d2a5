package gateway

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
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
	cfg.Providers["openai"] = config.Provider{Kind: config.KindOpenAI, BaseURL: "http://127.0.0.1:9", MaxConcurrent: 64}
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
