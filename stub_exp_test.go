package sluice

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

type stubRT struct{}

func (stubRT) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}, "Date": {"x"}, "Content-Length": {"10"}, "X-Request-Id": {"abc"}}, Body: io.NopCloser(strings.NewReader(`{"a":true}`)), ContentLength: 10, Request: r}, nil
}

func BenchmarkStubExp(b *testing.B) {
	b.Run("bare", func(b *testing.B) {
		benchRoundTrip(b, stubRT{}, "http://x/v1/chat/completions")
	})
	b.Run("sluice", func(b *testing.B) {
		tr := &Transport{Provider: "openai", Log: NewAttemptLog(io.Discard), Base: stubRT{}}
		benchRoundTrip(b, tr, "http://x/v1/chat/completions")
	})
}
