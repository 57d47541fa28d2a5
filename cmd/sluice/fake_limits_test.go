package main

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestFakeLimitFlags: --rpm and --tpm set the Provider's limits, which
// then refuse calls over a real socket with the API's rate-limit headers.
func TestFakeLimitFlags(t *testing.T) {
	var errOut strings.Builder
	p, listen, _, code, ok := parseFake([]string{"--rpm", "2", "--tpm", "10000", "--listen", "127.0.0.1:0"}, &errOut)
	if !ok || p.RequestsPerMinute != 2 || p.TokensPerMinute != 10000 || listen != "127.0.0.1:0" {
		t.Fatalf("parseFake: ok %v code %d %q, provider %+v, listen %q", ok, code, errOut.String(), p, listen)
	}
	if got, want := limitsLine(p), ", 2 requests/min, 10000 tokens/min"; got != want {
		t.Errorf("start line limits %q, want %q", got, want)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p.Now = func() time.Time { return now }
	srv := httptest.NewServer(p)
	defer srv.Close()
	body := `{"model":"gpt-test","max_tokens":100,"messages":[]}` // 51 bytes: 12 + 100 tokens
	var got []string
	for range 3 {
		resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got = append(got, resp.Status[:3]+" "+resp.Header.Get("x-ratelimit-remaining-requests")+" "+
			resp.Header.Get("x-ratelimit-remaining-tokens")+" "+resp.Header.Get("Retry-After"))
	}
	// The clock stands still: the third waits the whole 60 s.
	want := []string{"200 1 9888 ", "200 0 9776 ", "429 0 9776 60"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("answers %q, want %q", got, want)
	}
	if p.RateLimited() != 1 || p.Calls() != 3 {
		t.Errorf("rate limited %d of %d calls, want 1 of 3", p.RateLimited(), p.Calls())
	}
	var none strings.Builder
	p, _, _, _, _ = parseFake(nil, &none)
	if p.RequestsPerMinute != 0 || p.TokensPerMinute != 0 || limitsLine(p) != "" {
		t.Errorf("without the flags: limits %d/%d %q, want none", p.RequestsPerMinute, p.TokensPerMinute, limitsLine(p))
	}
}

// TestFakeNegativeLimits: a negative --rpm or --tpm is a usage error of
// one line that names the flag and what it takes. (parseFake, not run: a
// limit let through would start a server that runs until a signal.)
func TestFakeNegativeLimits(t *testing.T) {
	for _, args := range [][]string{{"--rpm", "-1"}, {"--tpm", "-5", "--rpm", "3"}} {
		var errOut strings.Builder
		p, _, _, code, ok := parseFake(append([]string{"--listen", "127.0.0.1:0"}, args...), &errOut)
		msg := errOut.String()
		if ok || p != nil || code != exitUsage || strings.Count(msg, "\n") != 1 ||
			!strings.HasPrefix(msg, "sluice fake: "+args[0]+" "+args[1]+": ") || !strings.Contains(msg, "0 or more") {
			t.Errorf("sluice fake %q: ok %v, exit %d, stderr %q; want exit %d and one line naming %s", args, ok, code, msg, exitUsage, args[0])
		}
	}
}

// TestFakeHelpTellsTheLimits: --help shows both flags and what a call's
// tokens are.
func TestFakeHelpTellsTheLimits(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"fake", "--help"}, strings.NewReader(""), &out, &out); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []string{"[--rpm N] [--tpm N]", "-rpm int", "-tpm int", "sliding 60 s window", "body bytes / 4", "Retry-After"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("--help lacks %q", s)
		}
	}
}

// TestFakeBurstAndHeaderFlags: --bucket --burst makes a per-minute limit
// enforced in bursts, and --limit-headers none a provider that tells only
// a 429's Retry-After: over a real socket, the third call in the same
// instant is refused, and no answer carries a rate-limit header.
func TestFakeBurstAndHeaderFlags(t *testing.T) {
	var errOut strings.Builder
	p, _, _, code, ok := parseFake([]string{"--rpm", "120", "--bucket", "--burst", "2", "--limit-headers", "none", "--listen", "127.0.0.1:0"}, &errOut)
	if !ok || !p.TokenBucket || p.Burst != 2 || p.LimitHeaders != "none" {
		t.Fatalf("parseFake: ok %v code %d %q, provider %+v", ok, code, errOut.String(), p)
	}
	if got, want := limitsLine(p), ", 120 requests/min (token buckets, bursts of 2 requests), rate-limit headers none"; got != want {
		t.Errorf("start line limits %q, want %q", got, want)
	}
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	p.Now = func() time.Time { return now }
	srv := httptest.NewServer(p)
	defer srv.Close()
	var got []string
	for range 3 {
		resp, err := srv.Client().Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		got = append(got, resp.Status[:3]+" "+resp.Header.Get("Retry-After"))
		for k := range resp.Header {
			if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
				t.Errorf("an answer carries %s with --limit-headers none", k)
			}
		}
	}
	if want := "200 |200 |429 1"; strings.Join(got, "|") != want {
		t.Errorf("answers %q, want %q: a burst of 2, then a 429 with Retry-After 1", strings.Join(got, "|"), want)
	}
	for _, args := range [][]string{{"--burst", "5"}, {"--limit-headers", "lies"}, {"--bucket", "--tokens-burst", "-1"}} {
		var errOut strings.Builder
		p, _, _, code, ok := parseFake(append([]string{"--listen", "127.0.0.1:0", "--rpm", "60"}, args...), &errOut)
		if ok || p != nil || code != exitUsage || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), args[len(args)-2]) {
			t.Errorf("sluice fake %q: ok %v, exit %d, stderr %q; want a usage error of one line naming %s", args, ok, code, errOut.String(), args[len(args)-2])
		}
	}
}
