package sluice

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// retryBudget is the name the older budget tests know RetryBudget by.
type retryBudget = RetryBudget

// holdingBase answers a call's first attempt 503 at once and holds its
// retries until release is closed, so that retrying calls stay in flight.
type holdingBase struct {
	mu      sync.Mutex
	seen    map[string]bool // request ids with an attempt made
	held    atomic.Int32
	release chan struct{}
}

func (h *holdingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	id := req.Header.Get("X-Request-Id")
	h.mu.Lock()
	retry := h.seen[id]
	h.seen[id] = true
	h.mu.Unlock()
	status := http.StatusServiceUnavailable
	if retry {
		h.held.Add(1)
		select {
		case <-h.release:
			status = http.StatusOK
		case <-req.Context().Done():
			return nil, context.Cause(req.Context())
		}
	}
	return &http.Response{StatusCode: status, Header: http.Header{}, Request: req,
		Body: io.NopCloser(strings.NewReader(`{}`))}, nil
}

// retryRefusals runs four calls at once on each of two Transports (sharing
// shared, when not nil) against one held upstream and returns how many
// retries went out and how many the budget refused. Run it in a synctest
// bubble.
func retryRefusals(t *testing.T, shared *RetryBudget) (held, refused int32) {
	t.Helper()
	base := &holdingBase{seen: map[string]bool{}, release: make(chan struct{})}
	var refusedN atomic.Int32
	pol := fastPolicy()
	pol.Timeout.Total = 10 * time.Second
	pol.Breaker.Failures = 100
	newT := func() *Transport {
		return &Transport{Base: base, Policy: pol, Provider: "p", RetryBudget: shared,
			Observe: func(a *Attempt) {
				if a.RetryBudgetExhausted {
					refusedN.Add(1)
				}
			}}
	}
	routes := []*Transport{newT(), newT()}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
			resp, err := routes[i%2].RoundTrip(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	// Past every backoff (at most Retry.Cap) and short of the Total
	// timeout, every call has its retry held or refused.
	time.Sleep(time.Second)
	synctest.Wait()
	if n := base.held.Load() + refusedN.Load(); n != 8 {
		t.Fatalf("%d retries held, %d refused, want 8 in all", base.held.Load(), refusedN.Load())
	}
	held, refused = base.held.Load(), refusedN.Load()
	close(base.release)
	wg.Wait()
	return held, refused
}

// Two Transports given one RetryBudget count their retries against it:
// with eight calls failing at once, only the floor of three may retry.
func TestRetryBudgetSharedBetweenTransports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if held, refused := retryRefusals(t, new(RetryBudget)); held != minRetries || refused != 8-minRetries {
			t.Errorf("one shared budget: %d retries, %d refused; want %d and %d", held, refused, minRetries, 8-minRetries)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		if held, refused := retryRefusals(t, nil); held != 2*minRetries || refused != 8-2*minRetries {
			t.Errorf("a budget each: %d retries, %d refused; want %d and %d", held, refused, 2*minRetries, 8-2*minRetries)
		}
	})
}

// A call that falls back counts in the budget of the provider it falls
// back to from then on, and in no budget once it has ended.
func TestFallbackMovesCallToTargetsBudget(t *testing.T) {
	primary, backup := new(RetryBudget), new(RetryBudget)
	onBackup := make(chan struct{})
	release := make(chan struct{})
	base := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		status := http.StatusServiceUnavailable
		if req.URL.Host == "backup.test" {
			close(onBackup)
			<-release
			status = http.StatusOK
		}
		return &http.Response{StatusCode: status, Header: http.Header{}, Request: req,
			Body: io.NopCloser(strings.NewReader(`{}`))}, nil
	})
	pol := fastPolicy()
	pol.Retry.MaxAttempts = 1
	tr := &Transport{Base: base, Policy: pol, Provider: "primary", RetryBudget: primary,
		Fallbacks: []Target{{Provider: "backup", RetryBudget: backup,
			Rewrite: func(r *http.Request) { r.URL.Host, r.Host = "backup.test", "backup.test" }}}}
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, "http://primary.test/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			done <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		done <- resp.StatusCode
	}()
	select {
	case <-onBackup:
	case <-time.After(5 * time.Second):
		t.Fatal("the call did not fall back within 5s")
	}
	pc, _ := primary.InFlight()
	bc, _ := backup.InFlight()
	close(release)
	if pc != 0 || bc != 1 {
		t.Errorf("while on the fallback: %d calls in the primary's budget, %d in the backup's; want 0 and 1", pc, bc)
	}
	if code := <-done; code != http.StatusOK {
		t.Fatalf("call answered %d, want the fallback's 200", code)
	}
	pc, _ = primary.InFlight()
	bc, _ = backup.InFlight()
	if pc != 0 || bc != 0 {
		t.Errorf("after the call: %d and %d calls in flight, want 0 and 0", pc, bc)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
