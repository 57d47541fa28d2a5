package dialect

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
		j := Gemini.Judge(http.StatusTooManyRequests, nil, tt.body)
		if j.Wait != tt.want || j.HasWait != tt.ok {
			t.Errorf("Judge(%s) waits %v, %v; want %v, %v", tt.body, j.Wait, j.HasWait, tt.want, tt.ok)
		}
	}
}

func TestGeminiDailyQuota(t *testing.T) {
	for _, tt := range []struct {
		status int
		body   []byte
		quota  bool
	}{
		{429, googleError(perDay + "," + retryInfo("40s")), true},
		{429, googleError(`{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"x/GenerateRequestsPerDay","quotaId":"y"}]}`), true},
		{429, googleError(perMinute + "," + retryInfo("13s")), false},
		{429, googleError(""), false},
		{403, googleError(perDay), false}, // only a 429 is a quota
	} {
		if got := Gemini.Judge(tt.status, nil, tt.body).Quota; got != tt.quota {
			t.Errorf("%d %s: quota %v, want %v", tt.status, tt.body, got, tt.quota)
		}
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
		if _, got := classifyGemini(sse.Event{Data: []byte(data)}); got != want {
			t.Errorf("classifyGemini(%s) = %d, want %d", data, got, want)
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
		if got := Gemini.Request(p, nil).Model; got != want {
			t.Errorf("Request(%q).Model = %q, want %q", p, got, want)
		}
	}
	r := Gemini.Request("/v1beta/models/gemini-2.0-flash:streamGenerateContent", nil)
	if !r.ModelCall || !r.Stream {
		t.Errorf("a streamed Gemini call reads as %+v, want a model call and a stream", r)
	}
	p, _, ok := Gemini.Retarget("/v1beta/models/gemini-2.0-flash:streamGenerateContent", nil, "gemini-2.5-pro")
	if !ok || p != "/v1beta/models/gemini-2.5-pro:streamGenerateContent" {
		t.Errorf("Retarget = %q, %v", p, ok)
	}
}

func FuzzGeminiJudge(f *testing.F) {
	f.Add(googleError(retryInfo("13s")))
	f.Add(googleError(perDay + "," + retryInfo("0.5s")))
	f.Fuzz(func(t *testing.T, body []byte) {
		if j := Gemini.Judge(429, nil, body); j.HasWait && j.Wait < 0 {
			t.Errorf("negative delay %v from %q", j.Wait, body)
		}
	})
}

func TestGeminiOutputLimit(t *testing.T) {
	for _, tt := range []struct {
		body string
		want int64
	}{
		{`{"contents":[],"generationConfig":{"temperature":0.2,"maxOutputTokens":256}}`, 256},
		{`{"generation_config":{"max_output_tokens":128},"contents":[]}`, 128},
		{`{"generationConfig":{"maxOutputTokens":0}}`, 0},
		{`{"generationConfig":{"maxOutputTokens":"12"}}`, 0},
		{`{"generationConfig":null}`, 0},
		{`{"generationConfig":{"nested":{"maxOutputTokens":9}}}`, 0}, // only one level down
		{`{"max_tokens":64,"generationConfig":{"maxOutputTokens":256}}`, 64},
	} {
		for _, p := range []string{"/v1beta/models/gemini-2.0-flash:generateContent",
			"/v1/projects/p/locations/l/publishers/google/models/gemini-2.0-flash:generateContent"} {
			if got := ForPath(p).Request(p, []byte(tt.body)).MaxTokens; got != tt.want {
				t.Errorf("%s: Request(%s).MaxTokens = %d, want %d", p, tt.body, got, tt.want)
			}
		}
	}
}
