package limit

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/dialect"
)

func TestPauseFor(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	hdr := func(kv ...string) http.Header {
		h := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name   string
		d      dialect.Dialect
		status int
		quota  bool
		h      http.Header
		ra     time.Duration
		want   time.Duration
	}{
		{"rate-limit 429", dialect.OpenAI, 429, false, nil, 2 * time.Second, 2 * time.Second},
		{"quota 429", dialect.OpenAI, 429, true, nil, 2 * time.Second, 0},
		{"429 without Retry-After", dialect.OpenAI, 429, false, nil, 0, 0},
		{"503 with Retry-After is not ours", dialect.OpenAI, 503, false, nil, 5 * time.Second, 0},
		{"Retry-After over an hour is cut", dialect.OpenAI, 429, false, nil, 3 * time.Hour, time.Hour},
		{"openai 250ms", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "250ms"), 0, 250 * time.Millisecond},
		{"openai 6m0s", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6m0s"), 0, 6 * time.Minute},
		{"openai 1m30.5s tokens", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-tokens", " 0 ", "x-ratelimit-reset-tokens", "1m30.5s"), 0, 90500 * time.Millisecond},
		{"openai the later of two", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "2s",
			"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "7s"), 0, 7 * time.Second},
		{"openai the later of header and Retry-After", dialect.OpenAI, 429, false, hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "2s"), 9 * time.Second, 9 * time.Second},
		{"openai busy window: one slot of 120 a minute", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1m0s",
			"x-ratelimit-limit-requests", "120"), 0, 500 * time.Millisecond},
		{"openai tokens: one token's refill", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6s",
			"x-ratelimit-limit-tokens", "10000"), 0, 600 * time.Microsecond},
		{"openai size malformed: the whole reset", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1m0s",
			"x-ratelimit-limit-requests", "lots"), 0, time.Minute},
		{"anthropic busy window", dialect.Anthropic, 200, false, hdr("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T12:01:00Z",
			"anthropic-ratelimit-requests-limit", "50"), 0, 1200 * time.Millisecond},
		{"openai remaining left", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "1", "x-ratelimit-reset-requests", "6m0s"), 0, 0},
		{"openai remaining malformed", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "zero", "x-ratelimit-reset-requests", "1s"), 0, 0},
		{"openai remaining negative", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "-1", "x-ratelimit-reset-requests", "1s"), 0, 0},
		{"openai reset malformed", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "soon"), 0, 0},
		{"openai reset negative", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "-5s"), 0, 0},
		{"openai reset missing", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "0"), 0, 0},
		{"openai reset of days is cut", dialect.OpenAI, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "100h"), 0, time.Hour},
		{"anthropic requests", dialect.Anthropic, 200, false, hdr("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T12:00:05Z"), 0, 5 * time.Second},
		{"anthropic tokens, offset zone", dialect.Anthropic, 200, false, hdr("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", "2026-11-30T13:00:02+01:00"), 0, 2 * time.Second},
		{"anthropic output tokens, fraction", dialect.Anthropic, 200, false, hdr("anthropic-ratelimit-output-tokens-remaining", "0", "anthropic-ratelimit-output-tokens-reset", "2026-11-30T12:00:01.5Z"), 0, 1500 * time.Millisecond},
		{"anthropic reset in the past", dialect.Anthropic, 200, false, hdr("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T11:59:00Z"), 0, 0},
		{"anthropic reset malformed", dialect.Anthropic, 200, false, hdr("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "tomorrow"), 0, 0},
		{"anthropic reset next year is cut", dialect.Anthropic, 200, false, hdr("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2027-11-30T12:00:00Z"), 0, time.Hour},
		{"anthropic tokens left", dialect.Anthropic, 200, false, hdr("anthropic-ratelimit-input-tokens-remaining", "10", "anthropic-ratelimit-input-tokens-reset", "2026-11-30T12:00:05Z"), 0, 0},
		{"azure requests spent, reset in seconds", dialect.Azure, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6"), 0, 6 * time.Second},
		{"azure tokens spent, fractional seconds", dialect.Azure, 200, false, hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "0.5"), 0, 500 * time.Millisecond},
		{"azure tokens spent, one token of 60000 a minute", dialect.Azure, 200, false, hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "60",
			"x-ratelimit-limit-tokens", "60000"), 0, time.Millisecond},
		{"azure not counted", dialect.Azure, 200, false, hdr("x-ratelimit-remaining-tokens", "-1", "x-ratelimit-reset-tokens", "0", "x-ratelimit-limit-tokens", "-1"), 0, 0},
		{"azure left", dialect.Azure, 200, false, hdr("x-ratelimit-remaining-requests", "5", "x-ratelimit-reset-requests", "6"), 0, 0},
		{"azure reset negative", dialect.Azure, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "-6"), 0, 0},
		{"azure reset of days is cut", dialect.Azure, 200, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "86400"), 0, MaxPause},
		{"gemini: Retry-After only", dialect.Gemini, 429, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1m"), 3 * time.Second, 3 * time.Second},
		{"no dialect: Retry-After only", nil, 429, false, hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1m"), 3 * time.Second, 3 * time.Second},
	}
	for _, tt := range tests {
		if got := PauseFor(tt.d, now, tt.status, tt.quota, tt.h, tt.ra); got != tt.want {
			t.Errorf("%s: PauseFor = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Each reading starts afresh: a spent window read before is not the
// next answer's, in this goroutine or another.
func TestPauseForForgets(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	spent := http.Header{}
	spent.Set("x-ratelimit-remaining-requests", "0")
	spent.Set("x-ratelimit-reset-requests", "1m")
	spent.Set("x-ratelimit-remaining-tokens", "0")
	spent.Set("x-ratelimit-reset-tokens", "2m")
	room := http.Header{}
	room.Set("x-ratelimit-remaining-requests", "5")
	room.Set("x-ratelimit-reset-requests", "1m")
	for range 100 {
		if got := PauseFor(dialect.OpenAI, now, 200, false, spent, 0); got != 2*time.Minute {
			t.Fatalf("spent windows: PauseFor = %v, want 2m", got)
		}
		if got := PauseFor(dialect.OpenAI, now, 200, false, room, 0); got != 0 {
			t.Fatalf("a window with room after a spent one: PauseFor = %v, want 0", got)
		}
	}
}

// FuzzPauseFor: no header value makes PauseFor panic or pause beyond
// MaxPause or before now.
func FuzzPauseFor(f *testing.F) {
	f.Add("0", "1m30.5s", "0", "2026-11-30T12:00:05Z", int64(0))
	f.Add("0", "9223372036854775807ns", "0", "9999-12-31T23:59:59Z", int64(-1))
	f.Add("", "", "x", "2026-02-30T25:00:00Z", int64(1<<62))
	f.Fuzz(func(t *testing.T, rem, reset, arem, areset string, ra int64) {
		h := http.Header{}
		h.Set("x-ratelimit-remaining-requests", rem)
		h.Set("x-ratelimit-reset-requests", reset)
		h.Set("anthropic-ratelimit-tokens-remaining", arem)
		h.Set("anthropic-ratelimit-tokens-reset", areset)
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		for _, d := range []dialect.Dialect{dialect.OpenAI, dialect.Anthropic} {
			if p := PauseFor(d, now, 429, false, h, time.Duration(ra)); p < 0 || p > MaxPause {
				t.Fatalf("%s: PauseFor = %v, outside [0, %v]", d.Kind(), p, MaxPause)
			}
		}
	})
}

// Reading an answer without rate-limit headers allocates nothing, in any
// dialect: Learn runs on every answer.
func TestPauseForPlainAnswerAllocatesNothing(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"}}
	now := time.Now()
	for _, d := range []dialect.Dialect{dialect.OpenAI, dialect.Anthropic, dialect.Azure, dialect.Gemini} {
		if n := testing.AllocsPerRun(100, func() { PauseFor(d, now, 200, false, h, 0) }); n != 0 {
			t.Errorf("%s: PauseFor allocates %v times on a plain answer, want 0", d.Kind(), n)
		}
	}
}
