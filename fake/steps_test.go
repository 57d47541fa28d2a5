package fake

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestStreamSteps(t *testing.T) {
	s := NewServer("")
	defer s.Close()

	start := time.Now()
	evs := streamOf(t, post(t, s, messagesPath, "stream:events=3;interval=20ms", messagesBody))
	if elapsed := time.Since(start); elapsed < 7*20*time.Millisecond {
		t.Errorf("8 events 20ms apart took %v", elapsed)
	}
	if len(evs) != 8 {
		t.Errorf("stream:events=3 gave %d events, want 8", len(evs))
	}

	evs = streamOf(t, post(t, s, chatPath, "stream:events=64", chatBody))
	if len(evs) != 64+3 {
		t.Errorf("stream:events=64 gave %d events, want 67", len(evs))
	}

	start = time.Now()
	resp := post(t, s, chatPath, "slow:50ms", chatBody)
	if elapsed := time.Since(start); resp.StatusCode != 200 || elapsed < 50*time.Millisecond {
		t.Errorf("slow:50ms: status %d after %v", resp.StatusCode, elapsed)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("slow:50ms: Content-Type %q", ct)
	}
}

func TestCut(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	for _, tt := range []struct {
		script, path string
		events       int
	}{
		{"stream:cut-after=0", chatPath, 0},
		{"stream:cut-after=3", chatPath, 3},
		{"stream:cut-after=40", messagesPath, 40},
		{"stream:events=10;cut-after=2", messagesPath, 2},
	} {
		resp := post(t, s, tt.path, tt.script, chatBody)
		evs, err := newSSE(resp.Body).all()
		if len(evs) != tt.events || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%s: %d events then %v, want %d then an unexpected EOF", tt.script, len(evs), err, tt.events)
		}
	}
}

// TestOverloaded: a request that asked for a stream gets the overloaded
// error as the stream's first event after a 200 (as Anthropic sends it);
// error-after=N sends it after N events.
func TestOverloaded(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	tests := []struct {
		script, path, body string
		events             int // before the error
		name, data         string
	}{
		{"overloaded", messagesPath, streamed(messagesBody), 0, "error",
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"overloaded", chatPath, streamed(chatBody), 0, "",
			`{"error":{"message":"The server is overloaded, please try again later.","type":"server_error","param":null,"code":"overloaded"}}`},
		{"stream:error-after=3", messagesPath, streamed(messagesBody), 3, "error",
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{"overloaded", respPath, `{"model":"gpt-test","input":"hi","stream":true}`, 0, "error", `"code":"server_error"`},
		// A stream: step streams even to a request that did not ask.
		{"stream:error-after=0", chatPath, chatBody, 0, "",
			`"code":"overloaded"`},
	}
	for _, tt := range tests {
		resp := post(t, s, tt.path, tt.script, tt.body)
		evs := streamOf(t, resp)
		if resp.StatusCode != 200 || len(evs) != tt.events+1 {
			t.Fatalf("%s %s: status %d, events %+v", tt.script, tt.path, resp.StatusCode, evs)
		}
		last := evs[tt.events]
		if last.name != tt.name || !strings.Contains(last.data, tt.data) {
			t.Errorf("%s %s: error event %+v, want %s %s", tt.script, tt.path, last, tt.name, tt.data)
		}
	}
}

// TestOverloadedNotStreamed: a request that did not ask for a stream gets
// the provider's overloaded error as a plain HTTP error in its dialect —
// Anthropic's 529 overloaded_error, OpenAI's and Google's 503 — never a
// 200 event stream that an SDK would take for the answer.
func TestOverloadedNotStreamed(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	tests := []struct {
		path, body string
		status     int
		want       string // in the body
	}{
		{messagesPath, messagesBody, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}`},
		{chatPath, chatBody, 503, `{"error":{"message":"The engine is currently overloaded, please try again later.","type":"server_error"`},
		{respPath, `{"model":"gpt-test","input":"hi"}`, 503, `"type":"server_error"`},
		{geminiPath, geminiBody, 503, `"status":"UNAVAILABLE"`},
	}
	for _, tt := range tests {
		resp := post(t, s, tt.path, "overloaded", tt.body)
		body := string(readAll(t, resp))
		if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, tt.want) {
			t.Errorf("overloaded %s: %d %s %s, want %d application/json holding %s",
				tt.path, resp.StatusCode, resp.Header.Get("Content-Type"), body, tt.status, tt.want)
		}
	}
	resp, body := azurePost(t, s, "/openai/deployments/d/chat/completions?api-version=2024-10-21", chatBody,
		"Sluice-Fake-Script", "overloaded")
	if resp.StatusCode != 503 || strings.Contains(body, "data:") {
		t.Errorf("overloaded on Azure: %d %s, want a 503 error body", resp.StatusCode, body)
	}
}

// streamed returns a JSON request body with "stream":true added.
func streamed(body string) string { return strings.Replace(body, "{", `{"stream":true,`, 1) }

func TestReset(t *testing.T) {
	s := NewServer("reset,200")
	defer s.Close()
	resp, err := send(t.Context(), s.Client(), s.URL+chatPath, "", chatBody)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("reset: got status %d, want a connection error", resp.StatusCode)
	}
	if resp := post(t, s, chatPath, "", chatBody); resp.StatusCode != 200 {
		t.Errorf("after reset: status %d", resp.StatusCode)
	}
	if s.Calls() != 2 {
		t.Errorf("Calls() = %d, want 2", s.Calls())
	}
}

// watched serves p, reporting each call's arrival and return.
func watched(p *Provider) (srv *httptest.Server, arrived, returned chan struct{}) {
	arrived, returned = make(chan struct{}, 10), make(chan struct{}, 10)
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() { returned <- struct{}{} }()
		arrived <- struct{}{}
		p.ServeHTTP(w, r)
	}))
	return srv, arrived, returned
}

func await(t *testing.T, c <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not happen within 5s", what)
	}
}

func TestHangReturnsWhenClientCancels(t *testing.T) {
	p := &Provider{Script: "hang"}
	srv, arrived, returned := watched(p)
	defer srv.Close()
	ctx, cancel := context.WithCancel(t.Context())
	errc := make(chan error, 1)
	go func() {
		resp, err := send(ctx, srv.Client(), srv.URL+chatPath, "", chatBody)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	await(t, arrived, "the call")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("client error %v, want context.Canceled", err)
	}
	await(t, returned, "the handler's return")
}

func TestStall(t *testing.T) {
	for _, tt := range []struct {
		path   string
		n      int
		cancel bool // release by the client leaving, else by Close
	}{
		{chatPath, 0, true}, {chatPath, 3, true}, {messagesPath, 2, true},
		{chatPath, 0, false}, {messagesPath, 4, false},
	} {
		p := &Provider{Script: "stream:stall-after=" + strconv.Itoa(tt.n)}
		srv, _, returned := watched(p)
		ctx, cancel := context.WithCancel(t.Context())
		resp, err := send(ctx, srv.Client(), srv.URL+tt.path, "", chatBody)
		if err != nil {
			t.Fatal(err)
		}
		sse := newSSE(resp.Body)
		for i := range tt.n {
			if _, err := sse.next(); err != nil {
				t.Fatalf("%s: event %d: %v", p.Script, i+1, err)
			}
		}
		select {
		case <-returned:
			t.Fatalf("%s: the handler returned before the client left", p.Script)
		default:
		}
		if tt.cancel {
			cancel()
		} else {
			p.Close()
		}
		if evs, err := sse.all(); len(evs) != 0 || err == nil {
			t.Errorf("%s cancel=%v: after %d events got %d more and %v, want none and an error",
				p.Script, tt.cancel, tt.n, len(evs), err)
		}
		await(t, returned, "the handler's return")
		resp.Body.Close()
		cancel()
		srv.Close()
	}
}

func TestCloseReleasesEverything(t *testing.T) {
	before := runtime.NumGoroutine()
	s := NewServer("")
	scripts := []string{"hang", "stream:stall-after=2", "slow:1h", "stream:events=100;interval=1h"}
	var wg sync.WaitGroup
	for _, script := range scripts {
		wg.Go(func() {
			resp, err := send(context.Background(), s.Client(), s.URL+messagesPath, script, messagesBody)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for deadline := time.Now().Add(5 * time.Second); s.Calls() < len(scripts); {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d calls arrived", s.Calls(), len(scripts))
		}
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	s.Close()
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %v, want at once (within 5s on a busy machine)", d)
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after Close:\n%s",
				before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestThrottledElsewhere: the APIs that do not throttle inside a stream
// answer a throttled step with a plain 429 in their shape, streamed or
// not.
func TestThrottledElsewhere(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	for _, tt := range []struct{ path, body, want string }{
		{messagesPath, streamed(messagesBody), `"rate_limit_error"`},
		{chatPath, streamed(chatBody), `"rate_limit_exceeded"`},
		{chatPath, chatBody, `"rate_limit_exceeded"`},
		{geminiStream, geminiBody, `"RESOURCE_EXHAUSTED"`},
	} {
		resp := post(t, s, tt.path, "throttled", tt.body)
		b := readAll(t, resp)
		if resp.StatusCode != 429 || !strings.Contains(string(b), tt.want) {
			t.Errorf("throttled %s: %d %s; want a 429 holding %s", tt.path, resp.StatusCode, b, tt.want)
		}
	}
}
