package sluice

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestBackoffDraws(t *testing.T) {
	r := Retry{Base: 400 * time.Millisecond, Cap: 16 * time.Second}
	for n := range 8 {
		ceil := min(r.Cap, r.Base<<n)
		var sum time.Duration
		const draws = 10000
		for range draws {
			d := r.backoff(n)
			if d < 0 || d >= ceil {
				t.Fatalf("retry %d: draw %v outside [0, %v)", n, d, ceil)
			}
			sum += d
		}
		mean := sum / draws
		if lo, hi := ceil*45/100, ceil*55/100; mean < lo || mean > hi {
			t.Errorf("retry %d: mean %v, want near %v", n, mean, ceil/2)
		}
	}
}

// scripted is a Base that answers from a list of responses (nil: hang
// until the attempt's context ends) and records when each attempt came.
type scripted struct {
	answers []func() *http.Response
	at      []time.Time
}

func (s *scripted) RoundTrip(req *http.Request) (*http.Response, error) {
	s.at = append(s.at, time.Now())
	i := min(len(s.at), len(s.answers)) - 1
	if s.answers[i] == nil {
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return s.answers[i](), nil
}

func status(code int, header ...string) func() *http.Response {
	return func() *http.Response {
		h := http.Header{"Content-Type": {"application/json"}}
		for i := 0; i+1 < len(header); i += 2 {
			h.Set(header[i], header[i+1])
		}
		return &http.Response{StatusCode: code, Header: h, Body: io.NopCloser(strings.NewReader(`{"ok":1}`))}
	}
}

func roundTrip(t *testing.T, tr *Transport) (*http.Response, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://provider.test/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	resp, err := tr.RoundTrip(req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return resp, err
}

func TestRetryAfterWaitExact(t *testing.T) {
	for _, tt := range []struct {
		name   string
		header []string
		wait   time.Duration
	}{
		{"seconds", []string{"Retry-After", "2"}, 2 * time.Second},
		{"milliseconds", []string{"Retry-After-Ms", "1500"}, 1500 * time.Millisecond},
		{"http date", nil, 3 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			for range 20 {
				synctest.Test(t, func(t *testing.T) {
					header := tt.header
					if header == nil {
						header = []string{"Retry-After", time.Now().Add(3 * time.Second).UTC().Format(http.TimeFormat)}
					}
					s := &scripted{answers: []func() *http.Response{status(429, header...), status(200)}}
					tr := &Transport{Base: s, Policy: Interactive()}
					resp, err := roundTrip(t, tr)
					if err != nil || resp.StatusCode != 200 {
						t.Fatalf("got %v, %v", resp, err)
					}
					gap := s.at[1].Sub(s.at[0])
					if gap < tt.wait || gap > tt.wait+tt.wait/10 {
						t.Errorf("waited %v, want %v plus at most 10 %%", gap, tt.wait)
					}
				})
			}
		})
	}
}

func TestFullJitterBetweenAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []func() *http.Response{status(503), status(503), status(503), status(200)}}
		p := Interactive()
		p.Retry.MaxAttempts = 4
		tr := &Transport{Base: s, Policy: p}
		resp, err := roundTrip(t, tr)
		if err != nil || resp.StatusCode != 200 || len(s.at) != 4 {
			t.Fatalf("got %v, %v after %d attempts", resp, err, len(s.at))
		}
		for i := 1; i < 4; i++ {
			ceil := min(p.Retry.Cap, p.Retry.Base<<(i-1))
			if gap := s.at[i].Sub(s.at[i-1]); gap >= ceil {
				t.Errorf("wait before retry %d: %v, want < %v", i, gap, ceil)
			}
		}
	})
}

func TestNothingOutlivesTotal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []func() *http.Response{nil}}
		p := Interactive() // connect 5s + first_byte 20s per attempt, total 30s
		tr := &Transport{Base: s, Policy: p}
		start := time.Now()
		_, err := roundTrip(t, tr)
		elapsed := time.Since(start)
		var te *TimeoutError
		if !errors.As(err, &te) {
			t.Fatalf("err = %v, want a timeout", err)
		}
		if elapsed > p.Timeout.Total {
			t.Errorf("took %v, want at most total %v", elapsed, p.Timeout.Total)
		}
		if len(s.at) != 2 {
			t.Errorf("%d attempts, want 2 (25s, then the rest of the 30s)", len(s.at))
		}
		if te.Phase != PhaseTotal {
			t.Errorf("phase %v, want total", te.Phase)
		}
	})
}

func TestFirstByteTimeoutPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []func() *http.Response{nil, status(200)}}
		p := Interactive()
		tr := &Transport{Base: s, Policy: p}
		resp, err := roundTrip(t, tr)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("got %v, %v", resp, err)
		}
		if gap := s.at[1].Sub(s.at[0]); gap < 25*time.Second || gap >= 25*time.Second+p.Retry.Base {
			t.Errorf("second attempt after %v, want connect+first_byte (25s) plus < one base backoff", gap)
		}
	})
}

func TestCallerCancelStopsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &scripted{answers: []func() *http.Response{nil}}
		tr := &Transport{Base: s}
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://p.test/v1/messages", strings.NewReader("{}"))
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := tr.RoundTrip(req)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if time.Since(start) != time.Second || len(s.at) != 1 {
			t.Errorf("ended after %v and %d attempts, want 1s and 1", time.Since(start), len(s.at))
		}
	})
}

// always503 is a Base that answers every attempt with 503 at once.
type always503 struct{ calls atomic.Int64 }

func (a *always503) RoundTrip(*http.Request) (*http.Response, error) {
	a.calls.Add(1)
	return status(503)(), nil
}

func TestRetryBudgetCapsAmplification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &always503{}
		p := Interactive()
		p.Breaker.Failures = 1000
		tr := &Transport{Base: base, Policy: p}
		const calls = 50
		start := make(chan struct{})
		var wg sync.WaitGroup
		for range calls {
			wg.Go(func() {
				<-start
				roundTrip(t, tr)
			})
		}
		close(start)
		wg.Wait()
		// Without a budget: 150 attempts. With it, 20 % of the calls in
		// flight (10 of 50) retry, twice each, plus at most the floor of 3
		// as the calls that may not retry end and the count in flight
		// falls; never fewer than the floor.
		most := int64(calls + 2*(calls/5+minRetries))
		if got := base.calls.Load(); got > most || got < calls+2*minRetries {
			t.Errorf("%d upstream attempts for %d calls, want %d..%d", got, calls, calls+2*minRetries, most)
		}
	})
}

// The idle timeout ends a body exactly one idle gap after its last chunk,
// however many chunks came before (each read re-arms the call's one
// timer, lazily), and the total timeout still ends a body read slowly
// but steadily.
func TestIdleGapAfterManyChunks(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks int
		every  time.Duration
		want   Phase
	}{
		{"stall", 8, 900 * time.Millisecond, PhaseIdle},
		{"total", 1000, 900 * time.Millisecond, PhaseTotal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := Interactive()
				p.Timeout = Timeouts{Connect: time.Second, FirstByte: time.Second, Idle: time.Second, Total: 10 * time.Second}
				pr, pw := io.Pipe()
				base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
					ctx := r.Context() // as net/http does, the attempt's end ends its body
					context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
					return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: pr}, nil
				})
				tr := &Transport{Base: base, Provider: "p", Policy: p}
				start := time.Now()
				req, _ := http.NewRequest("GET", "http://p.test/v1/models", nil)
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				stop := make(chan struct{})
				var wg sync.WaitGroup
				defer wg.Wait()
				defer close(stop)
				wg.Go(func() {
					for range tc.chunks {
						select { // the upstream's pace, in the bubble's time
						case <-stop:
							return
						case <-time.After(tc.every):
						}
						if _, err := pw.Write([]byte("x")); err != nil {
							return
						}
					}
				})
				var last time.Time
				buf := make([]byte, 16)
				for {
					n, err := resp.Body.Read(buf)
					if n > 0 {
						last = time.Now()
					}
					if err == nil {
						continue
					}
					var te *TimeoutError
					if !errors.As(err, &te) || te.Phase != tc.want {
						t.Fatalf("read ended with %v, want a %s timeout", err, tc.want)
					}
					break
				}
				pw.Close()
				switch tc.want {
				case PhaseIdle:
					if got := time.Since(last); got != time.Second {
						t.Errorf("idle timeout %v after the last chunk, want 1s", got)
					}
				case PhaseTotal:
					if got := time.Since(start); got != 10*time.Second {
						t.Errorf("total timeout after %v, want 10s", got)
					}
				}
			})
		})
	}
}
