package sluice

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const wholeAnswer = `{"id":"chatcmpl-2","object":"chat.completion","choices":[{"message":{"content":"second"}}]}`

// jsonSteps is an upstream whose n-th call plays steps[n] (the last
// repeats): "ok" a whole JSON answer, "stall" the headers and part of the
// body then silence, "cut" the headers and part of the body then a closed
// connection.
type jsonSteps struct {
	mu    sync.Mutex
	steps []string
	calls int
	done  chan struct{}
}

func newJSONSteps(t *testing.T, steps ...string) (*jsonSteps, *httptest.Server) {
	j := &jsonSteps{steps: steps, done: make(chan struct{})}
	srv := httptest.NewServer(j)
	t.Cleanup(func() {
		close(j.done)
		srv.CloseClientConnections()
		srv.Close()
	})
	return j, srv
}

func (j *jsonSteps) Calls() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.calls
}

func (j *jsonSteps) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	j.mu.Lock()
	step := j.steps[min(j.calls, len(j.steps)-1)]
	j.calls++
	j.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if step == "ok" {
		io.WriteString(w, wholeAnswer)
		return
	}
	w.Header().Set("Content-Length", "200")
	w.WriteHeader(200)
	io.WriteString(w, `{"id":"chatcmpl-1","choi`)
	http.NewResponseController(w).Flush()
	if step == "cut" {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
		return
	}
	select {
	case <-r.Context().Done():
	case <-j.done:
	}
}

func bufferedRig(t *testing.T, p Policy, steps ...string) (*jsonSteps, *rig, string) {
	checkLeaks(t)
	up, srv := newJSONSteps(t, steps...)
	logs := &lockedBuffer{}
	tr := &Transport{Policy: p, Provider: "openai", Log: NewAttemptLog(logs), BufferBody: true}
	t.Cleanup(tr.CloseIdleConnections)
	return up, &rig{t: t, tr: tr, logs: logs}, srv.URL + "/v1/chat/completions"
}

func (r *rig) post(url string) (*http.Response, error) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"model":"gpt-4o-mini","messages":[]}`))
	req.Header.Set("Content-Type", "application/json")
	return r.tr.RoundTrip(req)
}

// A JSON answer that stalls or is cut after its headers is a failed
// attempt like any other: retried, and the caller gets the next answer.
func TestBufferedBodyStallOrCutRetried(t *testing.T) {
	for _, tt := range []struct{ step, outcome, class string }{
		{"stall", "timeout", "timeout_idle"},
		{"cut", "fail", "eof"},
	} {
		t.Run(tt.step, func(t *testing.T) {
			up, r, url := bufferedRig(t, fastPolicy(), tt.step, "ok")
			resp, err := r.post(url)
			if err != nil {
				t.Fatalf("err %v, want the second answer", err)
			}
			if got := readAll(t, resp); resp.StatusCode != 200 || got != wholeAnswer {
				t.Fatalf("%d %q, want the second answer whole", resp.StatusCode, got)
			}
			if up.Calls() != 2 || resp.Header.Get("Sluice-Attempts") != "2" {
				t.Errorf("upstream calls %d, Sluice-Attempts %q; want 2", up.Calls(), resp.Header.Get("Sluice-Attempts"))
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
	up, r, url := bufferedRig(t, p, "stall")
	start := time.Now()
	resp, err := r.post(url)
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
	if up.Calls() != 2 || len(lines) != 2 || lines[1]["outcome"] != "timeout" {
		t.Fatalf("upstream calls %d, lines %v; want 2 and 2, the last timeout", up.Calls(), lines)
	}
	if _, err := r.post(url); !errors.Is(err, ErrCircuitOpen) {
		t.Errorf("next call err %v, want the breaker open after 2 stalled attempts", err)
	}
	if up.Calls() != 2 {
		t.Errorf("upstream calls %d, want none while open", up.Calls())
	}
}

// Without BufferBody the body is the caller's to read, as before.
func TestUnbufferedBodyStallReachesCaller(t *testing.T) {
	up, r, url := bufferedRig(t, fastPolicy(), "stall", "ok")
	r.tr.BufferBody = false
	resp, err := r.post(url)
	if err != nil {
		t.Fatal(err)
	}
	_, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(rerr, ErrTimeout) || up.Calls() != 1 {
		t.Errorf("read err %v after %d calls, want the idle timeout after 1", rerr, up.Calls())
	}
}
