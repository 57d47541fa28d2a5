package sluice

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/sse"
)

// googleError returns a Google 429 body with the given details.
func googleError(details string) []byte {
	return []byte(`{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[` + details + `]}}`)
}

const (
	perDay    = `{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"50"}]}`
	perMinute = `{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel","quotaValue":"15"}]}`
)

func retryInfo(d string) string {
	return `{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"` + d + `"}`
}

func TestGeminiRetryDelay(t *testing.T) {
	for _, tt := range []struct {
		body []byte
		want time.Duration
		ok   bool
	}{
		{googleError(perMinute + "," + retryInfo("13s")), 13 * time.Second, true},
		{googleError(retryInfo("0.5s")), 500 * time.Millisecond, true},
		{googleError(retryInfo("1.000340s")), time.Second + 340*time.Microsecond, true},
		{googleError(retryInfo("0s")), 0, true},
		{googleError(retryInfo("13")), 0, false},
		{googleError(retryInfo("-1s")), 0, false},
		{googleError(retryInfo("1e10s")), 0, false},
		{googleError(retryInfo("NaNs")), 0, false},
		{googleError(perMinute), 0, false},
		{[]byte(`{"error":{"message":"Rate limit reached","type":"requests"}}`), 0, false},
		{[]byte(`not json type.googleapis.com/google.rpc.RetryInfo`), 0, false},
	} {
		got, ok := rpcRetryDelay(tt.body)
		if got != tt.want || ok != tt.ok {
			t.Errorf("rpcRetryDelay(%s) = %v, %v; want %v, %v", tt.body, got, ok, tt.want, tt.ok)
		}
	}
	// A header's hint comes first.
	h := http.Header{"Retry-After": {"2"}}
	if d, ok := retryHint(h, googleError(retryInfo("13s")), time.Now()); !ok || d != 2*time.Second {
		t.Errorf("retryHint = %v, %v; want Retry-After's 2s", d, ok)
	}
}

func TestGeminiDailyQuotaIsQuota(t *testing.T) {
	r := Interactive().WithDefaults().Retry
	for _, tt := range []struct {
		body      []byte
		quota     bool
		retryable bool
	}{
		{googleError(perDay + "," + retryInfo("40s")), true, false},
		{googleError(`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"x/GenerateRequestsPerDay","quotaId":"y"}]}`), true, false},
		{googleError(perMinute + "," + retryInfo("13s")), false, true},
		{googleError(""), false, true},
	} {
		v := r.judgeStatus(http.StatusTooManyRequests, http.Header{}, tt.body)
		if (v.class == classQuota) != tt.quota || v.retryable != tt.retryable {
			t.Errorf("%s: class %q retryable %v; want quota %v, retryable %v", tt.body, v.class, v.retryable, tt.quota, tt.retryable)
		}
	}
	// Only a 429 is a quota.
	if v := r.judgeStatus(http.StatusForbidden, http.Header{}, googleError(perDay)); v.class == classQuota {
		t.Error("a 403 judged as a used-up quota")
	}
}

func TestGeminiErrorEventStatus(t *testing.T) {
	for data, want := range map[string]int{
		`{"error":{"code":503,"message":"overloaded","status":"UNAVAILABLE"}}`:   503,
		`{"error":{"code":429,"message":"x","status":"RESOURCE_EXHAUSTED"}}`:     429,
		`{"error":{"message":"x","status":"INTERNAL"}}`:                          500,
		`{"error":{"code":"rate_limit_exceeded","message":"x","type":"tokens"}}`: 429,
		`{"error":{"type":"overloaded_error","message":"x"}}`:                    529,
	} {
		if got := errorEventStatus([]byte(data)); got != want {
			t.Errorf("errorEventStatus(%s) = %d, want %d", data, got, want)
		}
	}
}

func TestGeminiEnd(t *testing.T) {
	for data, want := range map[string]bool{
		`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}`:       true,
		`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"MAX_TOKENS"}]}`: true,
		`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`:                             false,
		`{"candidates":[{"content":{"parts":[{"text":"\"finishReason\""}]}}]}`:              false,
		`{"candidates":[],"finishReason":"STOP"}`:                                           false,
	} {
		if got := isGeminiEnd(sse.Event{Data: []byte(data)}); got != want {
			t.Errorf("isGeminiEnd(%s) = %v, want %v", data, got, want)
		}
	}
}

func TestGeminiPathModel(t *testing.T) {
	for p, want := range map[string]string{
		"/v1beta/models/gemini-2.0-flash:generateContent": "gemini-2.0-flash",
		"/v1beta/models/bad\x00name:generateContent":      "", // fails CheckModel
		"/v1/chat/completions":                            "",
	} {
		if got := pathModel(p); got != want {
			t.Errorf("pathModel(%q) = %q, want %q", p, got, want)
		}
	}
	if !isLLMPath("/v1beta/models/gemini-2.0-flash:streamGenerateContent") {
		t.Error("a Gemini call is not retry-safe by default")
	}
}

func FuzzRPCRetryDelay(f *testing.F) {
	f.Add(googleError(retryInfo("13s")))
	f.Add(googleError(perDay + "," + retryInfo("0.5s")))
	f.Fuzz(func(t *testing.T, body []byte) {
		if d, ok := rpcRetryDelay(body); ok && d < 0 {
			t.Errorf("negative delay %v from %q", d, body)
		}
		isDailyQuota(body)
	})
}
