package fake

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	chatPath     = "/v1/chat/completions"
	messagesPath = "/v1/messages"
	respPath     = "/v1/responses"
	chatBody     = `{"model":"gpt-test","messages":[{"role":"user","content":"hi"}]}`
	messagesBody = `{"model":"claude-test","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
)

// send posts body to url with a script header (if any) and returns the
// response or the client's error.
func send(ctx context.Context, c *http.Client, url, script, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if script != "" {
		req.Header.Set(ScriptHeader, script)
	}
	return c.Do(req)
}

// post is send that fails the test on a client error.
func post(t *testing.T, s *Server, path, script, body string) *http.Response {
	t.Helper()
	resp, err := send(t.Context(), s.Client(), s.URL+path, script, body)
	if err != nil {
		t.Fatalf("POST %s (script %q): %v", path, script, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// readAll reads a response body, failing the test on an error.
func readAll(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return b
}

func decode(t *testing.T, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
}

// sseEvent is one server-sent event as a client reads it.
type sseEvent struct{ name, data string }

// sseReader reads server-sent events one at a time.
type sseReader struct{ br *bufio.Reader }

func newSSE(r io.Reader) *sseReader { return &sseReader{bufio.NewReader(r)} }

// next returns the next event, or io.EOF at a clean end between events.
func (r *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	started := false
	for {
		line, err := r.br.ReadString('\n')
		if err != nil {
			if err == io.EOF && (started || line != "") {
				err = io.ErrUnexpectedEOF
			}
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "" && started:
			return ev, nil
		case strings.HasPrefix(line, "event: "):
			ev.name, started = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			ev.data, started = strings.TrimPrefix(line, "data: "), true
		}
	}
}

// all reads the remaining events and the error that ended them (nil at a
// clean end).
func (r *sseReader) all() ([]sseEvent, error) {
	var evs []sseEvent
	for {
		ev, err := r.next()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func streamOf(t *testing.T, resp *http.Response) []sseEvent {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type = %q, want text/event-stream", ct)
	}
	evs, err := newSSE(resp.Body).all()
	if err != nil {
		t.Fatalf("reading stream: %v (after %d events)", err, len(evs))
	}
	return evs
}

type openAIErrorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

type anthropicErrorBody struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func TestErrorSteps(t *testing.T) {
	tests := []struct {
		script, path string
		status       int
		typ, code    string // the error's type, and OpenAI's code
		contains     string // a text the body must hold
	}{
		{"503", chatPath, 503, "server_error", "", "overloaded"},
		{"500", chatPath, 500, "server_error", "", "error"},
		{"429", chatPath, 429, "requests", "rate_limit_exceeded", "Rate limit"},
		{"429:insufficient_quota", chatPath, 429, "insufficient_quota", "insufficient_quota", "quota"},
		{"400:context_length_exceeded", chatPath, 400, "invalid_request_error", "context_length_exceeded", "context length"},
		{"400:content_policy", chatPath, 400, "invalid_request_error", "content_policy_violation", "safety"},
		{"401", chatPath, 401, "invalid_request_error", "invalid_api_key", "API key"},
		{"418", chatPath, 418, "invalid_request_error", "", "Invalid"},
		{"503", messagesPath, 503, "api_error", "", "Internal"},
		{"529", messagesPath, 529, "overloaded_error", "", "Overloaded"},
		{"429", messagesPath, 429, "rate_limit_error", "", "rate limit"},
		{"429:insufficient_quota", messagesPath, 429, "rate_limit_error", "", "insufficient_quota"},
		{"400:context_length_exceeded", messagesPath, 400, "invalid_request_error", "", "prompt is too long"},
		{"400:content_policy", messagesPath, 400, "invalid_request_error", "", "content filtering"},
		{"401", messagesPath, 401, "authentication_error", "", "x-api-key"},
		{"413", messagesPath, 413, "request_too_large", "", "bytes"},
		{"502", messagesPath, 502, "api_error", "", "Internal"},
		{"503", respPath, 503, "server_error", "", "overloaded"},
	}
	s := NewServer("")
	defer s.Close()
	for _, tt := range tests {
		resp := post(t, s, tt.path, tt.script, chatBody)
		body := readAll(t, resp)
		if resp.StatusCode != tt.status {
			t.Errorf("%s %s: status %d, want %d", tt.script, tt.path, resp.StatusCode, tt.status)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", tt.script, tt.path, ct)
		}
		if !strings.Contains(string(body), tt.contains) {
			t.Errorf("%s %s: body %s lacks %q", tt.script, tt.path, body, tt.contains)
		}
		if tt.path == messagesPath {
			var e anthropicErrorBody
			decode(t, body, &e)
			id := resp.Header.Get("request-id")
			if e.Type != "error" || e.Error.Type != tt.typ || e.Error.Message == "" || id == "" || e.RequestID != id {
				t.Errorf("%s: got %+v (request-id %q), want type error/%s", tt.script, e, id, tt.typ)
			}
			continue
		}
		var e openAIErrorBody
		decode(t, body, &e)
		code := ""
		if e.Error.Code != nil {
			code = *e.Error.Code
		}
		if e.Error.Type != tt.typ || code != tt.code || e.Error.Message == "" || resp.Header.Get("x-request-id") == "" {
			t.Errorf("%s %s: got %+v code %q, want type %s code %q", tt.script, tt.path, e, code, tt.typ, tt.code)
		}
		if !strings.Contains(string(body), `"param":`) {
			t.Errorf("%s: body %s lacks param", tt.script, body)
		}
	}
}

func TestRetryHints(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	tests := []struct{ script, header, want string }{
		{"429:retry-after=2", "Retry-After", "2"},
		{"429:retry-after-ms=1500", "retry-after-ms", "1500"},
		{"503:should-retry=false", "x-should-retry", "false"},
		{"429:retry-after=0;retry-after-ms=250", "retry-after-ms", "250"},
		{"503", "Retry-After", ""},
	}
	for _, tt := range tests {
		resp := post(t, s, chatPath, tt.script, chatBody)
		if got := resp.Header.Get(tt.header); got != tt.want {
			t.Errorf("%s: %s = %q, want %q", tt.script, tt.header, got, tt.want)
		}
	}

	resp := post(t, s, messagesPath, "503:retry-after-date=3", messagesBody)
	at, err := http.ParseTime(resp.Header.Get("Retry-After"))
	if err != nil {
		t.Fatalf("Retry-After %q: %v", resp.Header.Get("Retry-After"), err)
	}
	if d := time.Until(at); d <= 2*time.Second || d > 4*time.Second {
		t.Errorf("Retry-After date is %v ahead, want about 3s", d)
	}
}

func TestScriptPositions(t *testing.T) {
	s := NewServer("503,200")
	defer s.Close()
	steps := []struct {
		header string
		want   int
	}{
		{"", 503}, {"500,500,200", 500}, {"500,500,200", 500}, {"", 200},
		{"500,500,200", 200}, {"", 200}, {"500,500,200", 200}, {"429", 429},
	}
	for i, st := range steps {
		req, _ := http.NewRequest(http.MethodPost, s.URL+chatPath, strings.NewReader(chatBody))
		req.Header.Set("X-Request-Id", "call-"+strconv.Itoa(i))
		if st.header != "" {
			req.Header.Set(ScriptHeader, st.header)
		}
		resp, err := s.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != st.want {
			t.Errorf("call %d (script %q): status %d, want %d", i+1, st.header, resp.StatusCode, st.want)
		}
	}
	if got := s.Calls(); got != len(steps) {
		t.Errorf("Calls() = %d, want %d", got, len(steps))
	}
	reqs := s.Requests()
	if len(reqs) != len(steps) {
		t.Fatalf("Requests() has %d, want %d", len(reqs), len(steps))
	}
	r := reqs[2]
	if r.Method != "POST" || r.Path != chatPath || string(r.Body) != chatBody || r.Script != "500,500,200" ||
		r.Step != "500" || r.Header.Get("X-Request-Id") != "call-2" {
		t.Errorf("Requests()[2] = %+v", r)
	}
	if r := reqs[0]; r.Script != "503,200" || r.Step != "503" {
		t.Errorf("Requests()[0] script %q step %q", r.Script, r.Step)
	}
	reqs[0].Body[0] = 'X'
	if s.Requests()[0].Body[0] == 'X' {
		t.Error("Requests() shares its bodies with the Provider")
	}

	s.Reset()
	if resp := post(t, s, chatPath, "", chatBody); resp.StatusCode != 503 || s.Calls() != 1 || len(s.Requests()) != 1 {
		t.Errorf("after Reset: status %d, %d calls", resp.StatusCode, s.Calls())
	}
}

func TestConcurrentCalls(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	const n = 40
	statuses := make(chan int, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			resp, err := send(t.Context(), s.Client(), s.URL+messagesPath, "529,200", messagesBody)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	count := map[int]int{}
	for st := range statuses {
		count[st]++
	}
	if count[529] != 1 || count[200] != n-1 || s.Calls() != n {
		t.Errorf("statuses %v, calls %d; want one 529 and %d 200s", count, s.Calls(), n-1)
	}
}

func TestAdminAndOtherPaths(t *testing.T) {
	srv := httptest.NewServer(&Provider{}) // the zero value works
	defer srv.Close()
	c := srv.Client()
	for _, path := range []string{"/v1/chat/completions", "/chat/completions", "/x/v1/messages", "/v1/responses"} {
		resp, err := send(t.Context(), c, srv.URL+path, "", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("%s: status %d", path, resp.StatusCode)
		}
	}
	resp, err := send(t.Context(), c, srv.URL+"/v1/models", "", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	var e openAIErrorBody
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	decode(t, b, &e)
	if resp.StatusCode != 404 || e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, "/v1/models") {
		t.Errorf("/v1/models: %d %s", resp.StatusCode, b)
	}

	calls := func() int {
		resp, err := c.Get(srv.URL + "/fake/calls")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got struct{ Calls int }
		b, _ := io.ReadAll(resp.Body)
		decode(t, b, &got)
		return got.Calls
	}
	if got := calls(); got != 4 {
		t.Errorf("GET /fake/calls = %d, want 4", got)
	}
	resp, err = c.Get(srv.URL + "/fake/reset")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /fake/reset: %d, want 405", resp.StatusCode)
	}
	resp, err = c.Post(srv.URL+"/fake/reset", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := calls(); resp.StatusCode != http.StatusNoContent || got != 0 {
		t.Errorf("POST /fake/reset: %d, then %d calls", resp.StatusCode, got)
	}
}

func TestBadScript(t *testing.T) {
	s := NewServer("200,5o3")
	defer s.Close()
	for _, path := range []string{chatPath, messagesPath} {
		resp := post(t, s, path, "", chatBody)
		body := string(readAll(t, resp))
		if resp.StatusCode != 400 || !strings.Contains(body, `fake: script step 2 \"5o3\"`) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, body)
		}
	}
	if resp := post(t, s, chatPath, "201", chatBody); resp.StatusCode != 201 {
		t.Errorf("a good header script: status %d", resp.StatusCode)
	}
	if s.Calls() != 3 || s.Requests()[0].Step != "" {
		t.Errorf("calls %d, first step %q", s.Calls(), s.Requests()[0].Step)
	}
}

func TestMaxRequestsKeepsTheNewest(t *testing.T) {
	p := &Provider{MaxRequests: 3}
	srv := httptest.NewServer(p)
	defer srv.Close()
	for i := range 10 {
		resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(fmt.Sprintf(`{"model":"m%d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	reqs := p.Requests()
	if len(reqs) != 3 || string(reqs[2].Body) != `{"model":"m9"}` || p.Calls() != 10 {
		t.Fatalf("kept %d requests (last %q), %d calls; want the newest 3 of 10", len(reqs), reqs[len(reqs)-1].Body, p.Calls())
	}
}
