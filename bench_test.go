package sluice

import (
	"io"
	"net/http"
	"strconv"
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
// io.Discard) against the same in-process fake provider; contract is the
// bare Transport with only the headers DESIGN.md puts on every call, the
// least any implementation of it adds.
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
	b.Run("contract", func(b *testing.B) {
		tr := &contractOnly{base: newBase(Interactive().Timeout.Connect)}
		defer tr.base.CloseIdleConnections()
		benchRoundTrip(b, tr, url)
	})
	b.Run("sluice", func(b *testing.B) {
		tr := &Transport{Provider: "openai", Log: NewAttemptLog(io.Discard)}
		defer tr.CloseIdleConnections()
		benchRoundTrip(b, tr, url)
	})
}

// contractOnly is a bare http.Transport that does no more than DESIGN.md
// asks of every call's headers: a fresh request id sent upstream as
// X-Request-Id and X-Client-Request-Id, and Sluice-Request-Id,
// Sluice-Attempts, Sluice-Provider, Sluice-Model and x-should-retry set on
// the answer. It has no timeouts, retries, breaker or log: it measures
// what the contract's headers alone cost a round trip, on both sides of
// the connection, against the fake that parses them.
type contractOnly struct{ base *http.Transport }

func (t *contractOnly) RoundTrip(req *http.Request) (*http.Response, error) {
	id := NewRequestID()
	req.Header["X-Request-Id"] = []string{id}
	req.Header["X-Client-Request-Id"] = []string{id}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	v := [...]string{id, "1", "openai", "gpt-4o-mini", "false"}
	resp.Header["Sluice-Request-Id"] = v[0:1:1]
	resp.Header["Sluice-Attempts"] = v[1:2:2]
	resp.Header["Sluice-Provider"] = v[2:3:3]
	resp.Header["Sluice-Model"] = v[3:4:4]
	resp.Header["X-Should-Retry"] = v[4:5:5]
	return resp, nil
}

// BenchmarkEngine measures the engine's own cost, without the network's
// noise: Transport over a RoundTripper that answers at once from memory,
// beside that RoundTripper alone.
func BenchmarkEngine(b *testing.B) {
	const url = "http://provider.invalid/v1/chat/completions" // never dialled
	b.Run("memory", func(b *testing.B) {
		benchRoundTrip(b, memoryProvider{}, url)
	})
	b.Run("sluice", func(b *testing.B) {
		benchRoundTrip(b, &Transport{Provider: "openai", Log: NewAttemptLog(io.Discard), Base: memoryProvider{}}, url)
	})
}

// memoryProvider answers every request at once with a small JSON answer
// built in memory, with the four headers the fake sends.
type memoryProvider struct{}

func (memoryProvider) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	const answer = `{"id":"chatcmpl-1","object":"chat.completion","choices":[]}`
	h := http.Header{"Content-Type": {"application/json"}, "Date": {"Tue, 01 Dec 2026 05:00:00 GMT"},
		"Content-Length": {strconv.Itoa(len(answer))}, "X-Request-Id": {"req_1"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(strings.NewReader(answer)),
		ContentLength: int64(len(answer)), Request: r}, nil
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
