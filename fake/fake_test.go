package fake

import (
	"bufio"
	"context"
	"encoding/json"
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

func TestOpenAIAnswer(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	resp := post(t, s, chatPath, "", chatBody)
	body := readAll(t, resp)
	var got struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Role    string  `json:"role"`
				Content string  `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	decode(t, body, &got)
	prompt := len(chatBody) / 4
	if resp.StatusCode != 200 || !strings.HasPrefix(got.ID, "chatcmpl-") || got.Object != "chat.completion" ||
		got.Created == 0 || got.Model != "gpt-test" || len(got.Choices) != 1 {
		t.Fatalf("answer %s", body)
	}
	c := got.Choices[0]
	if c.Message.Role != "assistant" || c.Message.Content != "This is a fake answer." || c.Message.Refusal != nil ||
		c.FinishReason != "stop" || !strings.Contains(string(body), `"logprobs":null`) {
		t.Errorf("choice %+v in %s", c, body)
	}
	if u := got.Usage; u.PromptTokens != prompt || u.CompletionTokens != 5 || u.TotalTokens != prompt+5 {
		t.Errorf("usage %+v, want prompt %d, completion 5", u, prompt)
	}

	resp = post(t, s, "/chat/completions", "", `{}`)
	decode(t, readAll(t, resp), &got)
	if got.Model != "gpt-4o-mini" {
		t.Errorf("default model %q, want gpt-4o-mini", got.Model)
	}
}

type chatChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func TestOpenAIStream(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	for _, withUsage := range []bool{false, true} {
		body := `{"model":"gpt-test","stream":true,"messages":[]}`
		if withUsage {
			body = `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
		}
		evs := streamOf(t, post(t, s, chatPath, "", body))
		if last := evs[len(evs)-1]; last.data != "[DONE]" {
			t.Fatalf("last event %+v, want [DONE]", last)
		}
		var text strings.Builder
		var chunks []chatChunk
		for _, ev := range evs[:len(evs)-1] {
			var c chatChunk
			decode(t, []byte(ev.data), &c)
			if c.Object != "chat.completion.chunk" || c.Model != "gpt-test" || !strings.HasPrefix(c.ID, "chatcmpl-") ||
				len(chunks) > 0 && c.ID != chunks[0].ID {
				t.Fatalf("chunk %s", ev.data)
			}
			chunks = append(chunks, c)
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
			}
		}
		if chunks[0].Choices[0].Delta.Role != "assistant" || text.String() != "This is a fake answer." {
			t.Errorf("role %q, text %q", chunks[0].Choices[0].Delta.Role, text.String())
		}
		n := len(chunks)
		if withUsage {
			u := chunks[n-1]
			n--
			prompt := len(body) / 4
			if len(u.Choices) != 0 || u.Usage == nil || u.Usage.PromptTokens != prompt ||
				u.Usage.CompletionTokens != 5 || u.Usage.TotalTokens != prompt+5 {
				t.Errorf("usage chunk %+v", u)
			}
		}
		if fin := chunks[n-1].Choices[0].FinishReason; fin == nil || *fin != "stop" {
			t.Errorf("finish chunk %+v", chunks[n-1])
		}
		if n != 7 { // role, 5 texts, finish
			t.Errorf("withUsage=%v: %d chunks before usage and [DONE], want 7", withUsage, n)
		}
		for _, c := range chunks[:n] {
			if c.Usage != nil {
				t.Errorf("withUsage=%v: chunk with usage %+v", withUsage, c)
			}
		}
	}
}

func TestAnthropicAnswer(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	resp := post(t, s, messagesPath, "", messagesBody)
	body := readAll(t, resp)
	var got struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Role    string `json:"role"`
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
		Usage        struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	decode(t, body, &got)
	if !strings.HasPrefix(got.ID, "msg_") || got.Type != "message" || got.Role != "assistant" ||
		got.Model != "claude-test" || got.StopReason != "end_turn" || got.StopSequence != nil ||
		len(got.Content) != 1 || got.Content[0].Type != "text" || got.Content[0].Text != "This is a fake answer." {
		t.Errorf("answer %s", body)
	}
	if got.Usage.InputTokens != len(messagesBody)/4 || got.Usage.OutputTokens != 5 {
		t.Errorf("usage %+v", got.Usage)
	}
	if resp.Header.Get("request-id") == "" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", resp.Header)
	}
}

func TestAnthropicStream(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	s.Events = 3
	body := `{"model":"claude-test","stream":true,"max_tokens":64,"messages":[]}`
	evs := streamOf(t, post(t, s, "/x/v1/messages", "", body))
	var names []string
	var text strings.Builder
	for _, ev := range evs {
		names = append(names, ev.name)
		var e struct {
			Type    string `json:"type"`
			Message struct {
				ID    string         `json:"id"`
				Model string         `json:"model"`
				Usage map[string]int `json:"usage"`
			} `json:"message"`
			Delta struct {
				Type       string `json:"type"`
				Text       string `json:"text"`
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
			Usage map[string]int `json:"usage"`
		}
		decode(t, []byte(ev.data), &e)
		if e.Type != ev.name {
			t.Errorf("event %s has type %s", ev.name, e.Type)
		}
		switch ev.name {
		case "message_start":
			if !strings.HasPrefix(e.Message.ID, "msg_") || e.Message.Model != "claude-test" ||
				e.Message.Usage["input_tokens"] != len(body)/4 {
				t.Errorf("message_start %s", ev.data)
			}
		case "content_block_delta":
			if e.Delta.Type != "text_delta" {
				t.Errorf("delta %s", ev.data)
			}
			text.WriteString(e.Delta.Text)
		case "message_delta":
			if e.Delta.StopReason != "end_turn" || e.Usage["output_tokens"] != 3 {
				t.Errorf("message_delta %s", ev.data)
			}
		}
	}
	want := "message_start content_block_start content_block_delta content_block_delta content_block_delta " +
		"content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	if text.String() != "This is a" {
		t.Errorf("text %q", text.String())
	}
}

func TestResponsesAnswer(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	var got struct {
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	decode(t, readAll(t, post(t, s, respPath, "", `{"model":"gpt-test","input":"hi"}`)), &got)
	if got.Object != "response" || got.Status != "completed" || len(got.Output) != 1 ||
		got.Output[0].Content[0].Text != "This is a fake answer." || got.Usage.OutputTokens != 5 {
		t.Errorf("answer %+v", got)
	}

	evs := streamOf(t, post(t, s, respPath, "", `{"model":"gpt-test","input":"hi","stream":true}`))
	if len(evs) != 7 || evs[0].name != "response.created" || evs[1].name != "response.output_text.delta" ||
		evs[6].name != "response.completed" {
		t.Errorf("events %+v", evs)
	}
}

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

func TestOverloaded(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	tests := []struct {
		script, path string
		events       int // before the error
		name, data   string
	}{
		{"overloaded", messagesPath, 0, "error",
			`{"error":{"message":"Overloaded","type":"overloaded_error"},"type":"error"}`},
		{"overloaded", chatPath, 0, "",
			`{"error":{"message":"The server is overloaded, please try again later.","type":"server_error","param":null,"code":"overloaded"}}`},
		{"stream:error-after=3", messagesPath, 3, "error",
			`{"error":{"message":"Overloaded","type":"overloaded_error"},"type":"error"}`},
		{"overloaded", respPath, 0, "error", `"code":"server_error"`},
	}
	for _, tt := range tests {
		resp := post(t, s, tt.path, tt.script, chatBody)
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
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v", d)
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
