package sluice

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/internal/leaktest"

	"github.com/sluice-llm/sluice/breaker"
)

// sseUpstream answers its first failFirst calls with a 500, then a 200
// event stream of events, after which it holds the connection open and
// silent until the client leaves (or, with end, ends the stream).
//
// It plays the two cases the fake provider cannot: a stream held open
// after its terminal event (the fake's streams either send their end and
// close, or stall or are cut before the end, since a stall-after or
// cut-after always leaves events unsent), and a quota error as a stream's
// event (the fake's only error event is overloaded; its quota error is a
// JSON 429). Every other stream case uses the fake.
type sseUpstream struct {
	mu        sync.Mutex
	calls     int
	failFirst int
	events    string
	end       bool // end the stream after events instead of holding it open
	done      chan struct{}
}

func (u *sseUpstream) Calls() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.calls
}

func (u *sseUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	u.mu.Lock()
	u.calls++
	n := u.calls
	u.mu.Unlock()
	if n <= u.failFirst {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		io.WriteString(w, `{"error":{"message":"boom","type":"server_error"}}`)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	io.WriteString(w, u.events)
	http.NewResponseController(w).Flush()
	if u.end {
		return
	}
	select {
	case <-r.Context().Done():
	case <-u.done:
	}
}

// post sends a chat request to url, an sseUpstream's.
func (r *rig) post(url string) (*http.Response, error) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"model":"gpt-4o-mini","messages":[]}`))
	req.Header.Set("Content-Type", "application/json")
	return r.tr.RoundTrip(req)
}

func sseRig(t *testing.T, p Policy, failFirst int, events string) (*sseUpstream, *rig, string) {
	leaktest.Check(t)
	up := &sseUpstream{failFirst: failFirst, events: events, done: make(chan struct{})}
	srv := httptest.NewServer(up)
	logs := &lockedBuffer{}
	tr := &Transport{Policy: p, Provider: "openai", Log: NewAttemptLog(logs)}
	t.Cleanup(func() {
		close(up.done)
		tr.CloseIdleConnections()
		srv.CloseClientConnections()
		srv.Close()
	})
	return up, &rig{t: t, tr: tr, logs: logs}, srv.URL + "/v1/chat/completions"
}

// sseFakeRig is sseRig with the upstream served in process (see
// inProcess), for a test in a synctest bubble.
func sseFakeRig(t *testing.T, p Policy, failFirst int, events string) (*sseUpstream, *rig, string) {
	up := &sseUpstream{failFirst: failFirst, events: events, done: make(chan struct{})}
	logs := &lockedBuffer{}
	tr := &Transport{Base: inProcess{up}, Policy: p, Provider: "openai", Log: NewAttemptLog(logs)}
	t.Cleanup(func() { close(up.done) })
	return up, &rig{t: t, tr: tr, logs: logs}, inProcessURL + "/v1/chat/completions"
}

// readUntil reads resp's body until it holds want, then closes it before
// its end.
func readUntil(t *testing.T, resp *http.Response, want string) {
	t.Helper()
	var got []byte
	buf := make([]byte, 16)
	for !bytes.Contains(got, []byte(want)) {
		n, err := resp.Body.Read(buf)
		got = append(got, buf[:n]...)
		if err != nil {
			t.Fatalf("read %q then %v, before %q", got, err, want)
		}
	}
	resp.Body.Close()
}

const (
	openaiChunks   = "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n"
	openaiDone     = "data: [DONE]\n\n"
	anthropicStart = "event: message_start\ndata: {\"type\":\"message_start\"}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\"}\n\n"
	anthropicStop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	responsesStart = "event: response.created\ndata: {\"type\":\"response.created\"}\n\n"
	responsesDone  = "event: response.completed\ndata: {\"type\":\"response.completed\"}\n\n"
)

// A stream whose terminal event reached the caller is ok, and a breaker
// Success, even when the caller closes it before its end: a half-open
// breaker closes.
func TestTerminalEventThenCloseIsOK(t *testing.T) {
	for _, tt := range []struct{ name, start, end string }{
		{"openai", openaiChunks, openaiDone},
		{"anthropic", anthropicStart, anthropicStop},
		{"responses", responsesStart, responsesDone},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := fastPolicy()
				p.Retry.MaxAttempts = 1
				p.Breaker.Failures = 1
				p.Breaker.Cool = 50 * time.Millisecond
				_, r, url := sseFakeRig(t, p, 1, tt.start+tt.end)
				resp, err := r.post(url)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp) // the 500 opens the breaker
				time.Sleep(p.Breaker.Cool)
				resp, err = r.post(url) // the half-open probe
				if err != nil {
					t.Fatalf("probe: %v", err)
				}
				readUntil(t, resp, tt.end)
				lines := r.lines()
				if last := lines[len(lines)-1]; last["outcome"] != "ok" || last["error"] != "" || last["breaker"] != "half_open" {
					t.Errorf("probe line %v, want ok from half_open", last)
				}
				rec, _ := r.tr.Breaker("openai").Record()
				if rec.State != breaker.Closed {
					t.Errorf("breaker %v after a complete stream, want closed", rec.State)
				}
			})
		})
	}
}

// Closing a stream before its terminal event is the caller's choice.
func TestCloseBeforeTerminalEventIsClientCancel(t *testing.T) {
	r := newRig(t, "stream:stall-after=2", fastPolicy())
	resp, err := r.chat(true)
	if err != nil {
		t.Fatal(err)
	}
	readUntil(t, resp, `"This"`)
	if lines := r.lines(); len(lines) != 1 || lines[0]["outcome"] != "client_cancel" {
		t.Errorf("lines %v, want one client_cancel", lines)
	}
}

// A quota error as a stream's first event is judged like a quota 429
// JSON answer: not retried, logged quota_exhausted, never counted by the
// breaker.
func TestQuotaErrorEventNeverOpensBreaker(t *testing.T) {
	p := fastPolicy()
	p.Breaker.Failures = 2
	p.Breaker.Cool = time.Hour
	up, r, url := sseRig(t, p, 0,
		"data: {\"error\":{\"message\":\"You exceeded your current quota\",\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}\n\n")
	up.end = true
	for i := range 3 {
		resp, err := r.post(url)
		if errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("call %d refused: quota errors opened the breaker", i+1)
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); !strings.Contains(got, "insufficient_quota") {
			t.Fatalf("call %d: body %q, want the quota error event", i+1, got)
		}
	}
	if up.Calls() != 3 {
		t.Errorf("upstream calls %d, want 3 (one per call, none retried)", up.Calls())
	}
	for _, l := range r.lines() {
		if l["outcome"] != "fail" || l["error"] != "quota_exhausted" {
			t.Errorf("line %v, want fail quota_exhausted", l)
		}
	}
}
