package sluice

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// bufferedRig is a rig with BufferBody set, in front of a fake provider
// playing script.
func bufferedRig(t *testing.T, p Policy, script string) *rig {
	r := newRig(t, script, p)
	r.tr.BufferBody = true
	return r
}

// A JSON answer that stalls or is cut after its headers is a failed
// attempt like any other: retried, and the caller gets the next answer.
func TestBufferedBodyStallOrCutRetried(t *testing.T) {
	for _, tt := range []struct{ step, outcome, class string }{
		{"stall", "timeout", "timeout_idle"},
		{"cut", "fail", "eof"},
	} {
		t.Run(tt.step, func(t *testing.T) {
			r := bufferedRig(t, fastPolicy(), tt.step+",200")
			resp, err := r.chat(false)
			if err != nil {
				t.Fatalf("err %v, want the second answer", err)
			}
			got := readAll(t, resp)
			// Whole JSON, so neither the first answer's half nor a mix of both.
			if resp.StatusCode != 200 || !json.Valid([]byte(got)) || !strings.Contains(got, `"content":"This is a fake answer."`) {
				t.Fatalf("%d %q, want the second answer whole", resp.StatusCode, got)
			}
			if r.srv.Calls() != 2 || resp.Header.Get("Sluice-Attempts") != "2" {
				t.Errorf("upstream calls %d, Sluice-Attempts %q; want 2", r.srv.Calls(), resp.Header.Get("Sluice-Attempts"))
			}
			lines := r.lines()
			if len(lines) != 2 {
				t.Fatalf("%d log lines, want one per upstream attempt:\n%s", len(lines), r.logs.String())
			}
			if lines[0]["outcome"] != "retry" || lines[0]["error"] != tt.class || lines[1]["outcome"] != "ok" {
				t.Errorf("lines %v / %v; want retry %s, then ok", lines[0], lines[1], tt.class)
			}
		})
	}
}

// A body that always stalls ends the call in a timeout error, each
// stalled attempt counted by the breaker as a failure.
func TestBufferedBodyAlwaysStallingFails(t *testing.T) {
	p := fastPolicy()
	p.Timeout.Total = 8 * time.Second // room for two idle timeouts and a backoff
	p.Retry.MaxAttempts = 2
	p.Breaker.Failures = 2
	p.Breaker.Cool = time.Hour
	r := bufferedRig(t, p, "stall")
	start := time.Now()
	resp, err := r.chat(false)
	if resp != nil {
		resp.Body.Close()
	}
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != PhaseIdle || !errors.Is(err, ErrAttemptsExhausted) {
		t.Fatalf("err %v, want attempts exhausted on an idle timeout", err)
	}
	if d := time.Since(start); d > p.Timeout.Total+time.Second {
		t.Errorf("took %v, want within total %v + 1s", d, p.Timeout.Total)
	}
	lines := r.lines()
	if r.srv.Calls() != 2 || len(lines) != 2 || lines[1]["outcome"] != "timeout" {
		t.Fatalf("upstream calls %d, lines %v; want 2 and 2, the last timeout", r.srv.Calls(), lines)
	}
	if _, err := r.chat(false); !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("next call err %v, want the breaker open after 2 stalled attempts", err)
	}
	if r.srv.Calls() != 2 {
		t.Errorf("upstream calls %d, want none while open", r.srv.Calls())
	}
}

// Without BufferBody the body is the caller's to read, as before.
func TestUnbufferedBodyStallReachesCaller(t *testing.T) {
	r := bufferedRig(t, fastPolicy(), "stall,200")
	r.tr.BufferBody = false
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	_, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(rerr, ErrTimeout) || r.srv.Calls() != 1 {
		t.Errorf("read err %v after %d calls, want the idle timeout after 1", rerr, r.srv.Calls())
	}
}
