package sluice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/internal/leaktest"

	"github.com/sluice-llm/sluice/fake"
)

// failingBase is a Base whose every attempt fails with err, at once.
type failingBase struct {
	err   error
	calls atomic.Int64
}

func (b *failingBase) RoundTrip(*http.Request) (*http.Response, error) {
	b.calls.Add(1)
	return nil, b.err
}

// TestStackedTransports: a Transport whose Base is another Transport gets
// the inner one's errors, which wrap a *TimeoutError; it retries them as
// the timeouts they are, and never panics.
func TestStackedTransports(t *testing.T) {
	leaktest.Check(t)
	srv := fake.NewServer("hang")
	inner := fastPolicy()
	inner.Timeout.FirstByte = 100 * time.Millisecond
	inner.Timeout.Total = 5 * time.Second
	inner.Retry.MaxAttempts = 2
	outer := fastPolicy()
	outer.Timeout.FirstByte = 5 * time.Second
	outer.Timeout.Total = 10 * time.Second
	outer.Retry.MaxAttempts = 2
	in := &Transport{Policy: inner, Provider: "openai"}
	tr := &Transport{Base: in, Policy: outer, Provider: "openai"}
	t.Cleanup(func() {
		srv.Close()
		in.CloseIdleConnections()
	})
	req, _ := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini"}`))
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	elapsed := time.Since(start)
	if resp != nil {
		resp.Body.Close()
		t.Fatalf("got a %d response from a provider that never answers", resp.StatusCode)
	}
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != PhaseFirstByte {
		t.Fatalf("err = %v, want the inner first_byte timeout", err)
	}
	if got := srv.Calls(); got != 4 {
		t.Errorf("upstream calls %d, want 2 outer attempts × 2 inner = 4", got)
	}
	// Four first-byte timeouts of 100 ms; the bound only guards a hang.
	if elapsed < 400*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("took %v, want 0.4s..5s", elapsed)
	}
}

// TestWrappedTimeoutFromBase: a Base error that wraps a *TimeoutError is
// judged by the wrapped timeout's phase, without a panic: first_byte is
// retried, total ends the call.
func TestWrappedTimeoutFromBase(t *testing.T) {
	for _, tt := range []struct {
		phase Phase
		calls int64
	}{
		{PhaseFirstByte, 3},
		{PhaseTotal, 1},
	} {
		t.Run(string(tt.phase), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &failingBase{err: fmt.Errorf("x: %w", &TimeoutError{Phase: tt.phase, Limit: time.Second})}
				tr := &Transport{Base: base, Policy: Interactive()}
				_, err := roundTrip(t, tr)
				var te *TimeoutError
				if !errors.As(err, &te) || te.Phase != tt.phase || !errors.Is(err, ErrAttemptsExhausted) {
					t.Fatalf("err = %v, want attempts exhausted on a %s timeout", err, tt.phase)
				}
				if got := base.calls.Load(); got != tt.calls {
					t.Errorf("upstream calls %d, want %d", got, tt.calls)
				}
			})
		})
	}
}

// TestRetryHintEndsTheCallNow: a Retry-After hint above max_retry_after,
// or one that would end past the total deadline, ends the call at once
// with the real response. Each case leaves room for the other rule, so
// that only the rule it names can stop the retry.
func TestRetryHintEndsTheCallNow(t *testing.T) {
	for _, tt := range []struct {
		name   string
		header []string
		total  time.Duration
		max    time.Duration
	}{
		{"above max_retry_after", []string{"Retry-After", "2"}, 60 * time.Second, time.Second},
		{"above max_retry_after in ms", []string{"Retry-After-Ms", "1500"}, 60 * time.Second, time.Second},
		{"past the deadline", []string{"Retry-After", "3"}, 2 * time.Second, 20 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := &scripted{answers: []func() *http.Response{status(503, tt.header...), status(200)}}
				p := Interactive()
				p.Timeout.Total = tt.total
				p.Retry.MaxRetryAfter = tt.max
				tr := &Transport{Base: s, Policy: p}
				start := time.Now()
				resp, err := roundTrip(t, tr)
				if err != nil || resp.StatusCode != 503 {
					t.Fatalf("got %v, %v; want the provider's 503", resp, err)
				}
				if got := resp.Header.Get(tt.header[0]); got != tt.header[1] {
					t.Errorf("%s = %q, want the provider's %q", tt.header[0], got, tt.header[1])
				}
				if len(s.at) != 1 || time.Since(start) != 0 {
					t.Errorf("%d upstream calls after %v, want 1 at once", len(s.at), time.Since(start))
				}
			})
		})
	}
}

// TestProviderShouldRetryHint: the provider's x-should-retry overrides the
// status set both ways.
func TestProviderShouldRetryHint(t *testing.T) {
	for _, tt := range []struct {
		script string
		calls  int
		status int
	}{
		{"503:should-retry=false,200", 1, 503},
		{"529:should-retry=false,200", 1, 529},
		{"409:should-retry=true,200", 2, 200},
		{"400:should-retry=true,200", 2, 200},
		{"409,200", 1, 409}, // without the hint, 409 is not retried
	} {
		t.Run(tt.script, func(t *testing.T) {
			r := newRig(t, tt.script, fastPolicy())
			resp, err := r.chat(false)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if resp.StatusCode != tt.status || r.srv.Calls() != tt.calls {
				t.Errorf("status %d after %d upstream calls, want %d after %d", resp.StatusCode, r.srv.Calls(), tt.status, tt.calls)
			}
		})
	}
}

// TestCallerCancelDuringBackoff: a caller that cancels while the call
// waits to retry gets context.Canceled at once, and no further attempt is
// made.
func TestCallerCancelDuringBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &failingBase{err: syscall.ECONNRESET}
		p := Interactive()
		p.Retry.Base = 10 * time.Second
		p.Retry.Cap = 10 * time.Second
		tr := &Transport{Base: base, Policy: p}
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://p.test/v1/chat/completions", strings.NewReader("{}"))
		// Cancel once the first attempt is made and the call waits.
		var resp *http.Response
		var err error
		done := make(chan struct{})
		start := time.Now()
		go func() {
			defer close(done)
			resp, err = tr.RoundTrip(req)
		}()
		synctest.Wait()
		if base.calls.Load() != 1 {
			t.Fatalf("%d attempts before the wait, want 1", base.calls.Load())
		}
		cancel()
		<-done
		if resp != nil {
			resp.Body.Close()
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if elapsed := time.Since(start); elapsed != 0 {
			t.Errorf("returned after %v, want at the cancel, at once", elapsed)
		}
		if got := base.calls.Load(); got != 1 {
			t.Errorf("%d upstream attempts, want 1", got)
		}
	})
}

// TestCallerCancelDuringRetryAfterWait: a cancel while the call waits out
// a provider's Retry-After makes no further attempt and returns at once.
func TestCallerCancelDuringRetryAfterWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []func() *http.Response{status(503, "Retry-After", "5"), status(200)}}
		tr := &Transport{Base: s}
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://p.test/v1/chat/completions", strings.NewReader("{}"))
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		if resp != nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		if time.Since(start) != time.Second || len(s.at) != 1 {
			t.Errorf("ended after %v and %d attempts, want 1s and 1", time.Since(start), len(s.at))
		}
		if err == nil && resp.StatusCode != 503 {
			t.Errorf("status %d, want the provider's real 503 or an error", resp.StatusCode)
		}
	})
}

// TestShouldRetryStamped: every response RoundTrip returns says
// x-should-retry: false, unless KeepShouldRetry hands the provider's back.
func TestShouldRetryStamped(t *testing.T) {
	for _, tt := range []struct {
		name   string
		script string
		keep   bool
		stream bool
		want   string
	}{
		{"success", "200", false, false, "false"},
		{"stream", "200", false, true, "false"},
		{"final 503", "503", false, false, "false"},
		{"provider said true", "409:should-retry=true", false, false, "false"},
		{"kept", "409:should-retry=true", true, false, "true"},
		{"kept absent", "200", true, false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := fastPolicy()
			p.Retry.MaxAttempts = 1
			r := newRig(t, tt.script, p)
			r.tr.KeepShouldRetry = tt.keep
			resp, err := r.chat(tt.stream)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if got := resp.Header.Get("X-Should-Retry"); got != tt.want {
				t.Errorf("x-should-retry %q, want %q", got, tt.want)
			}
		})
	}
}
