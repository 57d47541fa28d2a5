package sluice

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/internal/leaktest"
)

// firstFails answers a call's first attempt (by X-Request-Id) with a 503
// asking for a retry after retryMS, and later attempts with a 200.
type firstFails struct {
	mu      sync.Mutex
	seen    map[string]bool
	calls   atomic.Int64
	retryMS string
}

func (f *firstFails) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	io.Copy(io.Discard, r.Body)
	id := r.Header.Get("X-Request-Id")
	f.mu.Lock()
	again := f.seen[id]
	f.seen[id] = true
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !again {
		w.Header().Set("retry-after-ms", f.retryMS)
		w.WriteHeader(503)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
		return
	}
	io.WriteString(w, `{"id":"x","choices":[]}`)
}

// An attempt line says retry only when another attempt follows: when the
// retry budget refuses, the line carries the attempt's real outcome, and
// Observe is told of the refusal.
func TestRetryBudgetRefusalLoggedAsFinal(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		up := &firstFails{seen: map[string]bool{}, retryMS: "1000"}
		var logs lockedBuffer
		var refusals atomic.Int64
		p := fastPolicy()
		p.Timeout.Total = 10 * time.Second
		tr := &Transport{Base: inProcess{up}, Policy: p, Provider: "openai", Log: NewAttemptLog(&logs), Observe: func(a *Attempt) {
			if a.RetryBudgetExhausted {
				refusals.Add(1)
			}
		}}
		r := &rig{t: t, tr: tr, logs: &logs}
		call := func() int {
			req, _ := http.NewRequest("POST", inProcessURL+"/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Error(err)
				return 0
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return resp.StatusCode
		}
		// Three calls take the budget's floor of retries and wait out their
		// retry-after; a fourth, while they wait, is refused a retry.
		var wg sync.WaitGroup
		for range minRetries {
			wg.Go(func() { call() })
		}
		synctest.Wait()
		if n := strings.Count(logs.String(), `"outcome":"retry"`); n != minRetries {
			t.Fatalf("the first calls logged %d retries, want %d:\n%s", n, minRetries, logs.String())
		}
		if got := call(); got != 503 {
			t.Errorf("refused call: status %d, want its 503", got)
		}
		wg.Wait()

		lines := r.lines()
		if int64(len(lines)) != up.calls.Load() {
			t.Errorf("%d log lines, %d upstream calls: want one line per attempt", len(lines), up.calls.Load())
		}
		retries := 0
		for _, l := range lines {
			if l["outcome"] == "retry" {
				retries++
			}
		}
		calls := minRetries + 1
		if want := int(up.calls.Load()) - calls; retries != want {
			t.Errorf("%d lines say retry, %d retries happened (%d upstream calls for %d calls):\n%s",
				retries, want, up.calls.Load(), calls, logs.String())
		}
		var refused []map[string]any
		for _, l := range lines {
			if l["status"] == 503.0 && l["outcome"] != "retry" {
				refused = append(refused, l)
			}
		}
		if len(refused) != 1 || refused[0]["outcome"] != "fail" || refused[0]["error"] != "status_503" {
			t.Errorf("refused attempt lines %v, want one fail status_503", refused)
		}
		if refusals.Load() != 1 {
			t.Errorf("Observe saw %d budget refusals, want 1", refusals.Load())
		}
	})
}
