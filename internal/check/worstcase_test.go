package check

import (
	"math"
	"os"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
)

func policyOf(connect, firstByte, total time.Duration, attempts int, base, cap, mra time.Duration) sluice.Policy {
	p := sluice.Interactive()
	p.Timeout.Connect, p.Timeout.FirstByte, p.Timeout.Total = connect, firstByte, total
	p.Retry.MaxAttempts, p.Retry.Base, p.Retry.Cap, p.Retry.MaxRetryAfter = attempts, base, cap, mra
	return p
}

// TestWorstCase checks figures computed by hand from
// N·(connect + first_byte) + Σ max(min(cap, base·2^(n-1)), 1.1·max_retry_after),
// bounded by total.
func TestWorstCase(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	cases := []struct {
		name           string
		p              sluice.Policy
		bounded, unbnd time.Duration
	}{
		// 3·(5s+20s) + 2·max(…, 22s) = 75s + 44s = 119s; total 30s.
		{"interactive", sluice.Interactive(), 30 * s, 119 * s},
		// The zero Policy is the interactive one.
		{"zero policy", sluice.Policy{}, 30 * s, 119 * s},
		// 5·(10s+120s) + 4·132s = 650s + 528s = 1178s; total 600s.
		{"nightly", sluice.Nightly(), 600 * s, 1178 * s},
		// One try: connect + first_byte.
		{"single attempt", policyOf(s, 2*s, time.Minute, 1, s, 5*s, 2*s), 3 * s, 3 * s},
		// 4·3s + waits max(1s,2.2s) + max(2s,2.2s) + max(4s,2.2s) = 12s + 8.4s.
		{"backoff and retry-after mixed", policyOf(s, 2*s, 10*time.Minute, 4, s, 5*s, 2*s), 20400 * ms, 20400 * ms},
		// 6·3s + waits 1.1s + 2s + 4s + 8s + 8s (cap) = 18s + 23.1s.
		{"backoff reaches cap", policyOf(s, 2*s, time.Hour, 6, s, 8*s, s), 41100 * ms, 41100 * ms},
		// 100·2s + waits 1.1s + 98·2s = 200s + 197.1s; past 64 retries.
		{"many attempts", policyOf(s, s, time.Hour, 100, s, 2*s, s), 397100 * ms, 397100 * ms},
		// Bounded just at total.
		{"exactly total", policyOf(s, 2*s, 3*s, 1, s, 5*s, 2*s), 3 * s, 3 * s},
		// Attempts beyond any sum saturate instead of overflowing.
		{"huge attempts", policyOf(s, 2*s, time.Hour, 1<<40, s, 8*s, s), time.Hour, math.MaxInt64},
		{"huge durations", policyOf(math.MaxInt64/2, math.MaxInt64/2, math.MaxInt64, 3, math.MaxInt64, math.MaxInt64, math.MaxInt64), math.MaxInt64, math.MaxInt64},
	}
	for _, tc := range cases {
		if got := worstCase(tc.p); got != tc.bounded {
			t.Errorf("%s: worstCase = %v, want %v", tc.name, got, tc.bounded)
		}
		if got := worstCaseUnbounded(tc.p); got != tc.unbnd {
			t.Errorf("%s: worstCaseUnbounded = %v, want %v", tc.name, got, tc.unbnd)
		}
	}
}

// FuzzWorstCaseRoute: every route of a config that Parse accepts has a
// worst case above 0 and at most its policy's total.
func FuzzWorstCaseRoute(f *testing.F) {
	if data, err := os.ReadFile("../config/testdata/design.yaml"); err == nil {
		f.Add(data)
	}
	f.Add([]byte("policies:\n  interactive: &b {retry: {max_attempts: 2}}\n  x: {<<: *b}\n"))
	f.Add([]byte("routes: [{prefix: /a, provider: openai, fallbacks: [{provider: openai, model: m}]}]\n"))
	f.Add([]byte("policies: {interactive: {retry: {max_attempts: 1000000, base: 1ns, cap: 1ns}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := config.Parse(data)
		if err != nil {
			return
		}
		for _, r := range c.Routes {
			if w := worstCaseRoute(c, r); w <= 0 || w > c.Policies[r.Policy].Timeout.Total {
				t.Fatalf("worstCaseRoute(%+v) = %v, outside (0, total]", r, w)
			}
		}
	})
}

func TestWorstCaseRoute(t *testing.T) {
	s, ms := time.Second, time.Millisecond
	c := config.Default()
	c.Policies["quick"] = policyOf(s, 2*s, 10*time.Minute, 4, s, 5*s, 2*s)
	c.Policies["tight"] = policyOf(s, 2*s, time.Minute, 4, s, 5*s, 2*s)
	fb := []config.Target{{Provider: "openai", Model: "a"}, {Provider: "openai", Model: "b"}}
	cases := []struct {
		name  string
		route config.Route
		want  time.Duration
	}{
		{"default route", c.Routes[0], 30 * s},
		{"no fallbacks", config.Route{Policy: "quick"}, 20400 * ms},
		// Three targets of 20.4s each.
		{"two fallbacks", config.Route{Policy: "quick", Fallbacks: fb}, 61200 * ms},
		// 61.2s, cut at the total of 60s.
		{"bounded by total", config.Route{Policy: "tight", Fallbacks: fb}, time.Minute},
		{"undefined policy is interactive", config.Route{Policy: "nope", Fallbacks: fb}, 30 * s},
	}
	for _, tc := range cases {
		if got := worstCaseRoute(c, tc.route); got != tc.want {
			t.Errorf("%s: worstCaseRoute = %v, want %v", tc.name, got, tc.want)
		}
	}
}
