package sluice

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// keepAliveUpstream answers each attempt with a 200 event stream that the
// attempt's script writes: a list of chunks, each after its pause; an
// empty script sends SSE comments every 500ms until the attempt ends.
type keepAliveUpstream struct {
	mu      sync.Mutex
	at      []time.Time
	scripts [][]timedChunk
	wg      sync.WaitGroup
}

type timedChunk struct {
	after time.Duration
	data  string
}

const keepAlive = ": OPENROUTER PROCESSING\n\n"

func (u *keepAliveUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	u.mu.Lock()
	n := len(u.at)
	u.at = append(u.at, time.Now())
	var script []timedChunk
	if n < len(u.scripts) {
		script = u.scripts[n]
	}
	u.mu.Unlock()
	pr, pw := io.Pipe()
	ctx := r.Context()
	context.AfterFunc(ctx, func() { pr.CloseWithError(context.Cause(ctx)) })
	u.wg.Go(func() {
		defer pw.Close()
		if script == nil {
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(500 * time.Millisecond):
				}
				if _, err := pw.Write([]byte(keepAlive)); err != nil {
					return
				}
			}
		}
		for _, c := range script {
			select {
			case <-ctx.Done():
				return
			case <-time.After(c.after):
			}
			if _, err := pw.Write([]byte(c.data)); err != nil {
				return
			}
		}
	})
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr}, nil
}

// TestKeepAliveIsNotTheFirstEvent: SSE comments sent while a model is
// queued keep no first-byte timer at bay. An upstream that sends only
// comments for longer than connect + first_byte is a silent one: the
// attempt times out at exactly that bound, nothing having reached the
// caller, and the retry's answer is delivered whole, comments included.
func TestKeepAliveIsNotTheFirstEvent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := &keepAliveUpstream{scripts: [][]timedChunk{nil, {
			{0, keepAlive},
			{200 * time.Millisecond, "data: {\"x\":1}\n\n"},
			{0, "data: [DONE]\n\n"},
		}}}
		defer u.wg.Wait()
		p := Interactive()
		p.Timeout = Timeouts{Connect: time.Second, FirstByte: 2 * time.Second, Idle: time.Second, Total: 30 * time.Second}
		var log []*Attempt
		var mu sync.Mutex
		tr := &Transport{Base: u, Provider: "p", Policy: p, Observe: func(a *Attempt) {
			mu.Lock()
			log = append(log, a)
			mu.Unlock()
		}}
		req, _ := http.NewRequest("POST", "http://p.test/v1/chat/completions", strings.NewReader(`{"stream":true}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(t, resp)
		if want := keepAlive + "data: {\"x\":1}\n\ndata: [DONE]\n\n"; b != want {
			t.Errorf("body %q, want %q", b, want)
		}
		if len(u.at) != 2 {
			t.Fatalf("%d upstream attempts, want 2", len(u.at))
		}
		if gap := u.at[1].Sub(u.at[0]); gap < 3*time.Second || gap >= 3*time.Second+p.Retry.Base {
			t.Errorf("retry after %v, want connect+first_byte (3s) plus < one base backoff: the comments kept the first-byte timer running", gap)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(log) < 1 || log[0].Error != "timeout_first_byte" {
			var got string
			if len(log) > 0 {
				got = log[0].Error
			}
			t.Errorf("first attempt's error %q, want timeout_first_byte", got)
		}
	})
}

// TestKeepAliveKeepsIdleAlive: after the first event, comments are bytes
// like any: a stream that sends only comments for 5s under a 1s idle
// timeout, then its end, is relayed whole in one attempt.
func TestKeepAliveKeepsIdleAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		script := []timedChunk{{0, "data: {\"x\":1}\n\n"}}
		for range 10 {
			script = append(script, timedChunk{500 * time.Millisecond, keepAlive})
		}
		script = append(script, timedChunk{500 * time.Millisecond, "data: [DONE]\n\n"})
		u := &keepAliveUpstream{scripts: [][]timedChunk{script}}
		defer u.wg.Wait()
		p := Interactive()
		p.Timeout = Timeouts{Connect: time.Second, FirstByte: 2 * time.Second, Idle: time.Second, Total: 30 * time.Second}
		tr := &Transport{Base: u, Provider: "p", Policy: p}
		req, _ := http.NewRequest("POST", "http://p.test/v1/chat/completions", strings.NewReader(`{"stream":true}`))
		start := time.Now()
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(t, resp) // a TimeoutError, or any error, fails the test
		if !strings.HasSuffix(b, "data: [DONE]\n\n") || strings.Count(b, keepAlive) != 10 {
			t.Errorf("body %q, want the event, 10 comments and the end", b)
		}
		if got := time.Since(start); got != 5500*time.Millisecond {
			t.Errorf("took %v, want 5.5s", got)
		}
		if len(u.at) != 1 {
			t.Errorf("%d upstream attempts, want 1", len(u.at))
		}
	})
}

// TestCommentsThenEOFIsACut: an upstream that sends comments and then
// ends the stream with no event was cut before its first event: the
// attempt is retried invisibly and the caller gets the retry's stream.
func TestCommentsThenEOFIsACut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		u := &keepAliveUpstream{scripts: [][]timedChunk{
			{{0, keepAlive}, {100 * time.Millisecond, keepAlive}},
			{{0, "data: {\"x\":1}\n\n"}, {0, "data: [DONE]\n\n"}},
		}}
		defer u.wg.Wait()
		tr := &Transport{Base: u, Provider: "p", Policy: Interactive()}
		req, _ := http.NewRequest("POST", "http://p.test/v1/chat/completions", strings.NewReader(`{"stream":true}`))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b := readAll(t, resp)
		if want := "data: {\"x\":1}\n\ndata: [DONE]\n\n"; b != want || len(u.at) != 2 {
			t.Errorf("body %q after %d upstream attempts, want %q after 2", b, len(u.at), want)
		}
	})
}
