package sluice

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/internal/leaktest"

	"github.com/sluice-llm/sluice/fake"
)

// fallbackRig is a Transport whose primary is one fake provider and whose
// fallback is another.
type fallbackRig struct {
	*rig
	backup *fake.Server
}

func newFallbackRig(t *testing.T, script string, p Policy) *fallbackRig {
	r := newRig(t, script, p)
	backup := fake.NewServer("200")
	t.Cleanup(backup.Close)
	u, _ := url.Parse(backup.URL)
	r.tr.Fallbacks = []Target{{Provider: "backup", Model: "backup-model", Rewrite: func(req *http.Request) {
		req.URL.Scheme, req.URL.Host, req.Host = u.Scheme, u.Host, u.Host
	}}}
	return &fallbackRig{rig: r, backup: backup}
}

// newFakeFallbackRig is newFallbackRig with both providers served in
// process (see inProcess), for a test in a synctest bubble: the primary
// at http://provider.test, the fallback at http://backup.test.
func newFakeFallbackRig(t *testing.T, script string, p Policy) *fallbackRig {
	r := newFakeRig(t, script, p)
	backup := &fake.Server{Server: &httptest.Server{URL: "http://backup.test"}, Provider: &fake.Provider{Script: "200"}}
	t.Cleanup(backup.Provider.Close)
	r.tr.Base = inProcess{hosts{"provider.test": r.srv.Provider, "backup.test": backup.Provider}}
	r.tr.Fallbacks = []Target{{Provider: "backup", Model: "backup-model", Rewrite: func(req *http.Request) {
		req.URL.Host, req.Host = "backup.test", "backup.test"
	}}}
	return &fallbackRig{rig: r, backup: backup}
}

func answerModel(t *testing.T, body string) string {
	t.Helper()
	var v struct{ Model string }
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("answer %q: %v", body, err)
	}
	return v.Model
}

// The fallback answers a call its primary cannot: after the primary's
// attempts and their backoffs (less than 5ms, then 10ms, on fastPolicy's),
// at once after a first-byte timeout, at once after a refusal no retry
// can mend. On the fake clock but for the reset, a real connection's.
func TestFallbackAnswersWhenPrimaryCannot(t *testing.T) {
	p := fastPolicy()
	for _, tt := range []struct {
		script       string
		primaryCalls int
		least, below time.Duration // the call's time, on the fake clock
	}{
		{"503", 3, 0, 3 * p.Retry.Base},
		{"429", 3, 0, 3 * p.Retry.Base},
		{"hang", 1, p.Timeout.FirstByte, p.Timeout.FirstByte + time.Nanosecond},
		{"400:context_length_exceeded", 1, 0, time.Nanosecond},
		{"reset", 3, -1, -1},
	} {
		t.Run(tt.script, func(t *testing.T) {
			if tt.least < 0 {
				fallbackAnswers(t, newFallbackRig(t, tt.script, p), tt.primaryCalls)
				return
			}
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				fallbackAnswers(t, newFakeFallbackRig(t, tt.script, p), tt.primaryCalls)
				if d := time.Since(start); d < tt.least || d >= tt.below {
					t.Errorf("answered after %v, want %v up to %v", d, tt.least, tt.below)
				}
			})
		})
	}
}

// fallbackAnswers checks that r's call is answered by the fallback after
// primaryCalls attempts of the primary.
func fallbackAnswers(t *testing.T, r *fallbackRig, primaryCalls int) {
	t.Helper()
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, resp)
	if resp.StatusCode != 200 || answerModel(t, got) != "backup-model" {
		t.Fatalf("%d %q, want the fallback's answer", resp.StatusCode, got)
	}
	if resp.Header.Get("Sluice-Provider") != "backup" || resp.Header.Get("Sluice-Model") != "backup-model" {
		t.Errorf("answered by %q/%q, want backup/backup-model", resp.Header.Get("Sluice-Provider"), resp.Header.Get("Sluice-Model"))
	}
	if r.srv.Calls() != primaryCalls || r.backup.Calls() != 1 {
		t.Errorf("calls primary %d, fallback %d; want %d, 1", r.srv.Calls(), r.backup.Calls(), primaryCalls)
	}
	lines := r.lines()
	if len(lines) != primaryCalls+1 {
		t.Fatalf("%d log lines, want %d", len(lines), primaryCalls+1)
	}
	if last := lines[len(lines)-1]; last["provider"] != "backup" || last["model"] != "backup-model" || last["outcome"] != "ok" {
		t.Errorf("last line %v", last)
	}
	if body := string(r.backup.Requests()[0].Body); !strings.Contains(body, `"model":"backup-model"`) {
		t.Errorf("fallback got body %s, want the model rewritten", body)
	}
}

// A stream silent after its header moves to the fallback at once when its
// first-byte timeout runs out: no retry of the primary, no backoff.
func TestFallbackSlowFirstTokenMovesOnAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fastPolicy()
		r := newFakeFallbackRig(t, "stream:stall-after=0", p)
		start := time.Now()
		resp, err := r.chat(true)
		if err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d != p.Timeout.FirstByte {
			t.Errorf("the fallback answered after %v, want first_byte %v", d, p.Timeout.FirstByte)
		}
		got := readAll(t, resp)
		if !strings.Contains(got, "[DONE]") || r.srv.Calls() != 1 || r.backup.Calls() != 1 {
			t.Fatalf("calls %d/%d, body %q: want one silent primary attempt, then the fallback's whole stream", r.srv.Calls(), r.backup.Calls(), got)
		}
	})
}

func TestNoFallback(t *testing.T) {
	for _, script := range []string{"401", "403", "429:insufficient_quota", "400:content_policy", "400", "422"} {
		t.Run(script, func(t *testing.T) {
			r := newFallbackRig(t, script, fastPolicy())
			resp, err := r.chat(false)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if resp.StatusCode == 200 || r.backup.Calls() != 0 || r.srv.Calls() != 1 {
				t.Errorf("status %d, calls %d/%d: want the primary's own error after one call, no fallback",
					resp.StatusCode, r.srv.Calls(), r.backup.Calls())
			}
		})
	}
}

func TestNoFallbackAfterFirstByte(t *testing.T) {
	r := newFallbackRig(t, "stream:cut-after=40", fastPolicy())
	resp, err := r.chat(true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, ErrStreamCut) || strings.Contains(string(b), "[DONE]") {
		t.Fatalf("err %v: want the cut reported, nothing stitched", err)
	}
	if r.backup.Calls() != 0 {
		t.Errorf("fallback called %d times after bytes reached the caller", r.backup.Calls())
	}
}

func TestOpenPrimaryGoesStraightToFallback(t *testing.T) {
	p := fastPolicy()
	p.Breaker.Failures = 2
	p.Breaker.Cool = time.Hour
	r := newFallbackRig(t, "503", p)
	for range 5 {
		resp, err := r.chat(false)
		if err != nil {
			t.Fatal(err)
		}
		if readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if r.srv.Calls() != 2 || r.backup.Calls() != 5 {
		t.Errorf("calls primary %d, fallback %d; want 2 (until it opened), 5", r.srv.Calls(), r.backup.Calls())
	}
}

func TestFlappingPrimary(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		var primaryCalls atomic.Int64
		inner := &fake.Provider{}
		defer inner.Close()
		primary := inProcess{http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			primaryCalls.Add(1)
			if down.Load() {
				w.WriteHeader(503)
				io.WriteString(w, `{"error":{"message":"down","type":"server_error"}}`)
				return
			}
			inner.ServeHTTP(w, req)
		})}
		backup := &fake.Provider{Script: "200"}
		defer backup.Close()
		p := fastPolicy()
		p.Breaker.Failures = 2
		const cool = 200 * time.Millisecond
		p.Breaker.Cool = cool
		tr := &Transport{Provider: "primary", Policy: p, Fallbacks: []Target{{Provider: "backup", Rewrite: func(r *http.Request) {
			r.URL.Host, r.Host = "backup.test", "backup.test"
		}}}, Base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if r.URL.Host == "backup.test" {
				return inProcess{backup}.RoundTrip(r)
			}
			return primary.RoundTrip(r)
		})}
		call := func() string {
			req, _ := http.NewRequest("POST", "http://primary.test/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("a call in the window failed: %v", err)
			}
			readAll(t, resp)
			if resp.StatusCode != 200 {
				t.Fatalf("a call in the window got %d", resp.StatusCode)
			}
			return resp.Header.Get("Sluice-Provider")
		}
		down.Store(true)
		const window = time.Second
		start := time.Now()
		for time.Since(start) < window {
			call()
			time.Sleep(5 * time.Millisecond)
		}
		// Two failures to open, then one probe per cool: one for each cool
		// of the window but the last, which the calls' backoffs may push
		// past its end.
		if got, least, most := primaryCalls.Load(), int64(2+window/cool-1), int64(2+window/cool); got < least || got > most {
			t.Errorf("primary called %d times in a %v outage, want %d to %d (probed once per cool)", got, window, least, most)
		}
		down.Store(false)
		recovered := time.Now()
		for call() != "primary" {
			if time.Since(recovered) > cool {
				t.Fatal("traffic did not come back to the primary within one cool of its recovery")
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}
