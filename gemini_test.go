package sluice

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/dialect"
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

func TestRetryHintHeaderFirst(t *testing.T) {
	// A header's hint comes before the body's.
	h := http.Header{"Retry-After": {"2"}}
	r := Interactive().WithDefaults().Retry
	v := r.judgeStatus(dialect.Gemini, 429, h, googleError(retryInfo("13s")))
	if d, ok := retryHint(h, v, time.Now()); !ok || d != 2*time.Second {
		t.Errorf("retryHint = %v, %v; want Retry-After's 2s", d, ok)
	}
	v = r.judgeStatus(dialect.Gemini, 429, http.Header{}, googleError(retryInfo("13s")))
	if d, ok := retryHint(http.Header{}, v, time.Now()); !ok || d != 13*time.Second {
		t.Errorf("retryHint = %v, %v; want RetryInfo's 13s", d, ok)
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
		v := r.judgeStatus(dialect.Gemini, http.StatusTooManyRequests, http.Header{}, tt.body)
		if (v.class == classQuota) != tt.quota || v.retryable != tt.retryable {
			t.Errorf("%s: class %q retryable %v; want quota %v, retryable %v", tt.body, v.class, v.retryable, tt.quota, tt.retryable)
		}
	}
	// Only a 429 is a quota.
	if v := r.judgeStatus(dialect.Gemini, http.StatusForbidden, http.Header{}, googleError(perDay)); v.class == classQuota {
		t.Error("a 403 judged as a used-up quota")
	}
}
