package sluice

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// bufferedRig is a rig with BufferBody set, in front of a fake provider
// playing script.
func bufferedRig(t *testing.T, p Policy, script string) *rig {
	r := newRig(t, script, p)
	r.tr.BufferBody = true
	return r
}

// fakeBufferedRig is bufferedRig served in process, for a synctest bubble.
func fakeBufferedRig(t *testing.T, p Policy, script string) *rig {
	r := newFakeRig(t, script, p)
	r.tr.BufferBody = true
	return r
}

// A JSON answer that stalls or is cut after its headers is a failed
// attempt like any other: retried, and the caller gets the next answer.
// A JSON answer that stalls or is cut after its headers is a failed
// attempt like any other: retried, and the caller gets the next answer.
// The stall is waited out on the fake clock, the cut is a real
// connection's.
func TestBufferedBodyStallOrCutRetried(t *testing.T) {
	t.Run("stall", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			p := fastPolicy()
			start := time.Now()
			r := fakeBufferedRig(t, p, "stall,200")
			bufferedRetried(t, r, "timeout", "timeout_idle")
			if d := time.Since(start); d < p.Timeout.Idle || d >= p.Timeout.Idle+p.Retry.Base {
				t.Errorf("answered after %v, want idle %v plus less than %v", d, p.Timeout.Idle, p.Retry.Base)
			}
		})
	})
	t.Run("cut", func(t *testing.T) {
		bufferedRetried(t, bufferedRig(t, fastPolicy(), "cut,200"), "fail", "eof")
	})
}

// bufferedRetried checks that r's call is answered by its second attempt,
// whole, the first logged as a retry of class.
func bufferedRetried(t *testing.T, r *rig, outcome, class string) {
	t.Helper()
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
	if lines[0]["outcome"] != "retry" || lines[0]["error"] != class || lines[1]["outcome"] != "ok" {
		t.Errorf("lines %v / %v; want retry %s, then ok", lines[0], lines[1], class)
	}
}

// A body that always stalls ends the call in a timeout error, each
// stalled attempt counted by the breaker as a failure.
func TestBufferedBodyAlwaysStallingFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fastPolicy()
		p.Timeout.Total = 8 * time.Second // room for two idle timeouts and a backoff
		p.Retry.MaxAttempts = 2
		p.Breaker.Failures = 2
		p.Breaker.Cool = time.Hour
		r := fakeBufferedRig(t, p, "stall")
		start := time.Now()
		resp, err := r.chat(false)
		if resp != nil {
			resp.Body.Close()
		}
		var te *TimeoutError
		if !errors.As(err, &te) || te.Phase != PhaseIdle || !errors.Is(err, ErrAttemptsExhausted) {
			t.Fatalf("err %v, want attempts exhausted on an idle timeout", err)
		}
		// Each attempt ends one idle gap after its half body; between
		// them, less than one base backoff.
		if d := time.Since(start); d < 2*p.Timeout.Idle || d >= 2*p.Timeout.Idle+p.Retry.Base {
			t.Errorf("took %v, want two idle timeouts (%v) plus less than %v", d, 2*p.Timeout.Idle, p.Retry.Base)
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
	})
}

// Without BufferBody the body is the caller's to read, as before: the read
// ends in the idle timeout exactly one idle gap after the half body.
func TestUnbufferedBodyStallReachesCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fastPolicy()
		r := newFakeRig(t, "stall,200", p)
		resp, err := r.chat(false)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(rerr, ErrTimeout) || r.srv.Calls() != 1 {
			t.Errorf("read err %v after %d calls, want the idle timeout after 1", rerr, r.srv.Calls())
		}
		if d := time.Since(start); d != p.Timeout.Idle {
			t.Errorf("read ended after %v, want idle %v", d, p.Timeout.Idle)
		}
	})
}
