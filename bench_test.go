package sluice

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/request"
)

const benchBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`

func benchRoundTrip(b *testing.B, rt http.RoundTripper, url string) {
	b.ReportAllocs()
	for b.Loop() {
		req, _ := http.NewRequest("POST", url, strings.NewReader(benchBody))
		req.Header.Set("Content-Type", "application/json")
		resp, err := rt.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// BenchmarkRoundTrip compares Go's bare http.Transport with Transport (all
// features on: breaker, retry bookkeeping, request id, attempt log to
// io.Discard) against the same in-process fake provider.
func BenchmarkRoundTrip(b *testing.B) {
	srv := fake.NewServer("200")
	defer srv.Close()
	srv.Provider.MaxRequests = 100 // the fake keeps no growing history to slow the later runs
	url := srv.URL + "/v1/chat/completions"
	b.Run("bare", func(b *testing.B) {
		tr := newBase(Interactive().Timeout.Connect)
		defer tr.CloseIdleConnections()
		benchRoundTrip(b, tr, url)
	})
	b.Run("sluice", func(b *testing.B) {
		tr := &Transport{Provider: "openai", Log: NewAttemptLog(io.Discard)}
		defer tr.CloseIdleConnections()
		benchRoundTrip(b, tr, url)
	})
}

func BenchmarkAttemptLogLine(b *testing.B) {
	l := NewAttemptLog(io.Discard)
	a := &Attempt{RequestID: "0123456789abcdef01234567", Attempt: 1, Policy: "interactive", Provider: "openai",
		Model: "gpt-4o-mini", Method: "POST", Path: "/v1/chat/completions", Status: 200, Outcome: OutcomeOK,
		LatencyMS: 12.345, TTFBMS: 3.21, BytesOut: 80, BytesIn: 400, Breaker: "closed"}
	b.ReportAllocs()
	for b.Loop() {
		l.Write(a)
	}
}

func BenchmarkJSONModel(b *testing.B) {
	body := []byte(`{"messages":[{"role":"user","content":"hello there, a prompt of some length"}],"temperature":0.2,"model":"gpt-4o-mini","stream":true}`)
	b.ReportAllocs()
	for b.Loop() {
		if request.Model(body) != "gpt-4o-mini" {
			b.Fatal("wrong model")
		}
	}
}
