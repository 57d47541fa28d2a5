package sluice

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestGeminiRetryInfoTiming: a per-minute RESOURCE_EXHAUSTED is retried
// after its RetryInfo's retryDelay, plus at most 10 % of jitter, and the
// attempt log names the model from the path; a per-day one is not retried
// at all.
func TestGeminiRetryInfoTiming(t *testing.T) {
	for _, tt := range []struct {
		name, details string
		calls         int32
		min, max      time.Duration
	}{
		{"per minute, 13s", perMinute + "," + retryInfo("13s"), 2, 13 * time.Second, 13*time.Second + 1300*time.Millisecond},
		{"per minute, 0.5s", perMinute + "," + retryInfo("0.5s"), 2, 500 * time.Millisecond, 550 * time.Millisecond},
		{"per day", perDay + "," + retryInfo("40s"), 1, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
					status, body := http.StatusTooManyRequests, googleError(tt.details)
					if calls.Add(1) > 1 {
						status, body = 200, []byte(`{"candidates":[{"finishReason":"STOP"}]}`)
					}
					return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
						Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
				})
				var log bytes.Buffer
				p := Interactive()
				p.Timeout.Total = time.Minute
				tr := &Transport{Base: base, Policy: p, Provider: "gemini", Log: NewAttemptLog(&log)}
				req, _ := http.NewRequest("POST", "http://g.test/v1beta/models/gemini-2.5-flash:generateContent?key=AIza-secret",
					strings.NewReader(`{"contents":[]}`))
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				elapsed := time.Since(start)
				if calls.Load() != tt.calls {
					t.Fatalf("%d upstream calls, want %d", calls.Load(), tt.calls)
				}
				if elapsed < tt.min || elapsed > tt.max {
					t.Errorf("took %v, want within [%v, %v]", elapsed, tt.min, tt.max)
				}
				tr.Log.Flush()
				if l := log.String(); !strings.Contains(l, `"model":"gemini-2.5-flash"`) || strings.Contains(l, "AIza-secret") {
					t.Errorf("log %s: want the path's model, never the key", l)
				}
			})
		})
	}
}
