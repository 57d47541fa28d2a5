package dialect

import (
	"net/http"
	"reflect"
	"testing"
	"time"
)

// windowsOf returns the windows d reads from the header of the pairs kv,
// as of now.
func windowsOf(d Dialect, now time.Time, kv ...string) []Window {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	var out []Window
	d.Windows(h, now, func(w Window) { out = append(out, w) })
	return out
}

func TestWindows(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	req := func(size, left int64, reset time.Duration) Window {
		return Window{Requests: true, Size: size, Left: left, Reset: reset}
	}
	tok := func(size, left int64, reset time.Duration) Window {
		return Window{Size: size, Left: left, Reset: reset}
	}
	tests := []struct {
		name string
		d    Dialect
		kv   []string
		want []Window
	}{
		{"openai none", OpenAI, []string{"content-type", "application/json"}, nil},
		{"openai 250ms", OpenAI, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "250ms"},
			[]Window{req(0, 0, 250*time.Millisecond)}},
		{"openai 6m0s", OpenAI, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6m0s"},
			[]Window{req(0, 0, 6*time.Minute)}},
		{"openai tokens, spaces, 1m30.5s", OpenAI, []string{"x-ratelimit-remaining-tokens", " 0 ", "x-ratelimit-reset-tokens", "1m30.5s"},
			[]Window{tok(0, 0, 90500*time.Millisecond)}},
		{"openai both, requests first", OpenAI, []string{"x-ratelimit-remaining-tokens", "9000", "x-ratelimit-reset-tokens", "6ms", "x-ratelimit-limit-tokens", "10000",
			"x-ratelimit-remaining-requests", "119", "x-ratelimit-reset-requests", "500ms", "x-ratelimit-limit-requests", "120"},
			[]Window{req(120, 119, 500*time.Millisecond), tok(10000, 9000, 6*time.Millisecond)}},
		{"openai bare seconds", OpenAI, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6"},
			[]Window{req(0, 0, 6*time.Second)}},
		{"openai size malformed", OpenAI, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1m0s", "x-ratelimit-limit-requests", "lots"},
			[]Window{req(0, 0, time.Minute)}},
		{"openai remaining malformed", OpenAI, []string{"x-ratelimit-remaining-requests", "zero", "x-ratelimit-reset-requests", "1s"},
			[]Window{req(0, -1, time.Second)}},
		{"openai remaining negative", OpenAI, []string{"x-ratelimit-remaining-requests", "-1", "x-ratelimit-reset-requests", "1s"},
			[]Window{req(0, -1, time.Second)}},
		{"openai remaining below -1", OpenAI, []string{"x-ratelimit-remaining-requests", "-5", "x-ratelimit-reset-requests", "1s"},
			[]Window{req(0, -1, time.Second)}},
		{"openai reset malformed", OpenAI, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "soon"},
			[]Window{req(0, 0, 0)}},
		{"openai reset negative", OpenAI, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "-5s"},
			[]Window{req(0, 0, 0)}},
		{"openai reset missing", OpenAI, []string{"x-ratelimit-remaining-requests", "0"}, []Window{req(0, 0, 0)}},
		{"openai no remaining: no window", OpenAI, []string{"x-ratelimit-limit-requests", "120", "x-ratelimit-reset-requests", "1s"}, nil},
		{"openai reads no anthropic header", OpenAI, []string{"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T12:00:05Z"}, nil},

		{"azure seconds", Azure, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6"}, []Window{req(0, 0, 6*time.Second)}},
		{"azure fractional seconds", Azure, []string{"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "0.5"}, []Window{tok(0, 0, 500*time.Millisecond)}},
		{"azure 60000 tokens a minute", Azure, []string{"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "60", "x-ratelimit-limit-tokens", "60000"},
			[]Window{tok(60000, 0, time.Minute)}},
		{"azure not counted", Azure, []string{"x-ratelimit-remaining-tokens", "-1", "x-ratelimit-reset-tokens", "0", "x-ratelimit-limit-tokens", "-1"},
			[]Window{tok(0, -1, 0)}},
		{"azure reset negative", Azure, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "-6"}, []Window{req(0, 0, 0)}},
		{"azure seconds of a day", Azure, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "86400"}, []Window{req(0, 0, 24*time.Hour)}},
		{"azure seconds out of range", Azure, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "2e9"}, []Window{req(0, 0, 0)}},

		{"anthropic requests", Anthropic, []string{"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T12:00:05Z"},
			[]Window{req(0, 0, 5*time.Second)}},
		{"anthropic busy window", Anthropic, []string{"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T12:01:00Z",
			"anthropic-ratelimit-requests-limit", "50"}, []Window{req(50, 0, time.Minute)}},
		{"anthropic tokens, offset zone", Anthropic, []string{"anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", "2026-11-30T13:00:02+01:00"},
			[]Window{tok(0, 0, 2*time.Second)}},
		{"anthropic all four, in order", Anthropic, []string{
			"anthropic-ratelimit-output-tokens-remaining", "0", "anthropic-ratelimit-output-tokens-reset", "2026-11-30T12:00:01.5Z",
			"anthropic-ratelimit-input-tokens-remaining", "10", "anthropic-ratelimit-input-tokens-reset", "2026-11-30T12:00:05Z",
			"anthropic-ratelimit-tokens-remaining", "7", "anthropic-ratelimit-tokens-limit", "100",
			"anthropic-ratelimit-requests-remaining", "3", "anthropic-ratelimit-requests-limit", "5", "anthropic-ratelimit-requests-reset", "2026-11-30T12:00:01Z"},
			[]Window{req(5, 3, time.Second), tok(100, 7, 0), tok(0, 10, 5*time.Second), tok(0, 0, 1500*time.Millisecond)}},
		{"anthropic reset in the past", Anthropic, []string{"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T11:59:00Z"},
			[]Window{req(0, 0, 0)}},
		{"anthropic reset not RFC 3339", Anthropic, []string{"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "5s"},
			[]Window{req(0, 0, 0)}},
		{"anthropic reads no openai header", Anthropic, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s"}, nil},

		{"gemini reports none", Gemini, []string{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s",
			"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "2026-11-30T12:00:05Z"}, nil},
	}
	for _, tt := range tests {
		if got := windowsOf(tt.d, now, tt.kv...); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: %s.Windows = %+v, want %+v", tt.name, tt.d.Kind(), got, tt.want)
		}
	}
}

// FuzzWindows: no header value makes a dialect's Windows panic or report
// a window out of its ranges: Left -1 or more, Size and Reset 0 or more.
func FuzzWindows(f *testing.F) {
	f.Add("0", "1m30.5s", "120", "2026-11-30T12:00:05Z")
	f.Add("0", "9223372036854775807ns", "9223372036854775808", "9999-12-31T23:59:59Z")
	f.Add("", "", "x", "2026-02-30T25:00:00Z")
	f.Add("-1", "-1", "-1", "0001-01-01T00:00:00Z")
	f.Fuzz(func(t *testing.T, left, reset, size, at string) {
		now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
		for _, d := range []Dialect{OpenAI, Azure, Anthropic, Gemini} {
			h := http.Header{}
			for _, k := range []string{"X-Ratelimit-Remaining-Requests", "X-Ratelimit-Remaining-Tokens", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Output-Tokens-Remaining"} {
				h.Set(k, left)
			}
			for _, k := range []string{"X-Ratelimit-Reset-Requests", "X-Ratelimit-Reset-Tokens"} {
				h.Set(k, reset)
			}
			for _, k := range []string{"Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Output-Tokens-Reset"} {
				h.Set(k, at)
			}
			for _, k := range []string{"X-Ratelimit-Limit-Requests", "Anthropic-Ratelimit-Requests-Limit"} {
				h.Set(k, size)
			}
			d.Windows(h, now, func(w Window) {
				if w.Left < -1 || w.Size < 0 || w.Reset < 0 {
					t.Fatalf("%s: window %+v out of range", d.Kind(), w)
				}
			})
		}
	})
}

// noWindow is told no window: it captures nothing, so that passing it
// allocates nothing.
func noWindow(Window) { panic("a window on a plain answer") }

// Reading an answer without rate-limit headers allocates nothing: the
// limiter asks on every answer.
func TestWindowsPlainAnswerAllocatesNothing(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"req_1"}}
	now := time.Now()
	for _, d := range []Dialect{OpenAI, Azure, Anthropic, Gemini} {
		if n := testing.AllocsPerRun(100, func() { d.Windows(h, now, noWindow) }); n != 0 {
			t.Errorf("%s.Windows allocates %v times on a plain answer, want 0", d.Kind(), n)
		}
	}
}
