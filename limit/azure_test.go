package limit

import (
	"net/http"
	"testing"
	"time"
)

// Azure OpenAI sends OpenAI's x-ratelimit- headers with the reset in bare
// seconds, and -1 for a window it does not count: the limiter learns from
// them on azure routes as from OpenAI's.
func TestPauseForAzure(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		h    map[string]string
		want time.Duration
	}{
		{"requests spent, reset in seconds", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6"}, 6 * time.Second},
		{"tokens spent, fractional seconds", map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "0.5"}, 500 * time.Millisecond},
		{"tokens spent, one token of 60000 a minute", map[string]string{"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "60",
			"x-ratelimit-limit-tokens": "60000"}, time.Millisecond},
		{"not counted", map[string]string{"x-ratelimit-remaining-tokens": "-1", "x-ratelimit-reset-tokens": "0", "x-ratelimit-limit-tokens": "-1"}, 0},
		{"left", map[string]string{"x-ratelimit-remaining-requests": "5", "x-ratelimit-reset-requests": "6"}, 0},
		{"reset negative", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "-6"}, 0},
		{"reset of days is cut", map[string]string{"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "86400"}, MaxPause},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.h {
			h.Set(k, v)
		}
		if got := PauseFor(now, 200, false, h, 0); got != tt.want {
			t.Errorf("%s: PauseFor = %v, want %v", tt.name, got, tt.want)
		}
	}
}
