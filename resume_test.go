package sluice

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/internal/leaktest"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// words is the 60-word answer of the resume fakes: "w01 w02 … w60",
// streamed one word an event.
var words = func() []string {
	w := make([]string, 60)
	for i := range w {
		w[i] = fmt.Sprintf("w%02d", i+1)
	}
	return w
}()

var wordsText = strings.Join(words, " ")

// breakKind says how a wordy provider's stream breaks.
type breakKind int

const (
	whole      breakKind = iota // no break
	cutAt                       // the connection closes without the stream's end
	stallAt                     // the stream goes silent
	errorAt                     // the provider's overloaded error event
	toolCutAt                   // a tool call, then a cut
	otherStart                  // the whole answer, of other words
	hangs                       // no answer until the caller leaves
	fails                       // 503
)

// wordy is a provider speaking Anthropic's or OpenAI's stream that
// answers the 60 words, its nth call breaking as plan[n] says after
// after[n] words. A request ending in an assistant message is continued
// from that text (Anthropic's prefill), unless refuse says it answers
// 400; OpenAI's dialect reads it as a turn and answers the words again.
type wordy struct {
	t      *testing.T
	d      dialect.Dialect
	plan   []breakKind
	after  []int
	refuse bool

	mu     sync.Mutex
	bodies [][]byte
	srv    *httptest.Server
}

func newWordy(t *testing.T, d dialect.Dialect, plan []breakKind, after []int) *wordy {
	w := &wordy{t: t, d: d, plan: plan, after: after}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *wordy) calls() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.bodies)
}

func (w *wordy) body(i int) []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.bodies[i]
}

func (w *wordy) serve(rw http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	n := len(w.bodies)
	w.bodies = append(w.bodies, b)
	w.mu.Unlock()
	kind, after := whole, 0
	if n < len(w.plan) {
		kind, after = w.plan[n], w.after[n]
	}
	switch kind {
	case hangs:
		<-r.Context().Done()
		return
	case fails:
		rw.WriteHeader(503)
		return
	}
	text := wordsText
	prefix := w.prefix(b)
	if prefix != "" && w.d == dialect.Anthropic {
		if w.refuse {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(400)
			io.WriteString(rw, `{"type":"error","error":{"type":"invalid_request_error","message":"This model does not support assistant message prefill."}}`)
			return
		}
		if !strings.HasPrefix(text, prefix) {
			w.t.Errorf("prefill %q is not a prefix of the answer", prefix)
		}
		text = text[len(prefix):]
	}
	if kind == otherStart {
		text = strings.ReplaceAll(text, "w", "x")
	}
	pieces := strings.SplitAfter(text, " ") // "w01 ", "w02 ", …, "w60"
	rw.Header().Set("Content-Type", "text/event-stream")
	fl := rw.(http.Flusher)
	ev := func(typ, data string) {
		if w.d == dialect.Anthropic {
			fmt.Fprintf(rw, "event: %s\ndata: %s\n\n", typ, data)
		} else {
			fmt.Fprintf(rw, "data: %s\n\n", data)
		}
		fl.Flush()
	}
	openai := func(delta, finish string) string {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		return `{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + f + `}]}`
	}
	if w.d == dialect.Anthropic {
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`)
	} else {
		ev("", openai(`{"role":"assistant","content":""}`, ""))
	}
	if kind == toolCutAt {
		if w.d == dialect.Anthropic {
			ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`)
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`)
		} else {
			ev("", openai(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}`, ""))
		}
		panic(http.ErrAbortHandler)
	}
	if w.d == dialect.Anthropic {
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	}
	for i, p := range pieces {
		if kind != whole && kind != otherStart && i == after {
			switch kind {
			case cutAt:
				panic(http.ErrAbortHandler)
			case stallAt:
				<-r.Context().Done()
				return
			case errorAt:
				if w.d == dialect.Anthropic {
					ev("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
				} else {
					ev("", `{"error":{"message":"The server is overloaded","type":"server_error","param":null,"code":null}}`)
				}
				return
			}
		}
		s, _ := json.Marshal(p)
		if w.d == dialect.Anthropic {
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`+string(s)+`}}`)
		} else {
			ev("", openai(`{"content":`+string(s)+`}`, ""))
		}
	}
	out := len(pieces)
	if w.d == dialect.Anthropic {
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":%d}}`, out))
		ev("message_stop", `{"type":"message_stop"}`)
		return
	}
	ev("", openai(`{}`, "stop"))
	ev("", fmt.Sprintf(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":%d,"total_tokens":%d}}`, out, out+10))
	io.WriteString(rw, "data: [DONE]\n\n")
}

// prefix returns the text of the request's final assistant message, ""
// when it ends with another role.
func (w *wordy) prefix(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) == 0 {
		w.t.Errorf("the fake cannot read the request %s: %v", body, err)
		return ""
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "assistant" {
		return ""
	}
	var s string
	if json.Unmarshal(last.Content, &s) != nil {
		w.t.Errorf("the prefix is not a string: %s", last.Content)
	}
	return s
}

// resumeRig is a Transport under Policy.Resume in front of a primary of
// dialect d, with fallbacks.
type resumeRig struct {
	*rig
	url string
}

func newResumeRig(t *testing.T, d dialect.Dialect, primary *wordy, attempts int, fallbacks ...Target) *resumeRig {
	p := fastPolicy()
	p.Resume = true
	p.Retry.MaxAttempts = attempts
	p.Timeout.Idle = 300 * time.Millisecond
	p.Timeout.Total = 10 * time.Second
	logs := &lockedBuffer{}
	tr := &Transport{Policy: p, Provider: "primary", Dialect: d, Log: NewAttemptLog(logs), Fallbacks: fallbacks}
	path := "/v1/messages"
	if d != dialect.Anthropic {
		path = "/v1/chat/completions"
	}
	return &resumeRig{rig: &rig{t: t, tr: tr, logs: logs}, url: primary.srv.URL + path}
}

func (r *resumeRig) stream(t *testing.T) (*http.Response, []byte) {
	t.Helper()
	body := `{"model":"claude-haiku-4-5","max_tokens":1024,"stream":true,"messages":[{"role":"user","content":"count"}]}`
	if !strings.HasSuffix(r.url, "/messages") {
		body = `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"count"}]}`
	}
	req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp, got
}

// read decodes the client's stream: its text, its error event (nil when
// none) and whether it ended.
func read(t *testing.T, d dialect.Dialect, stream []byte) (string, *chat.Answer, *chat.Error) {
	t.Helper()
	a, e, _ := collect(t, codecOf(d), stream)
	var text strings.Builder
	if a != nil {
		for _, p := range a.Content {
			text.WriteString(p.Text)
		}
	}
	return text.String(), a, e
}

func (r *resumeRig) outcomes() []string {
	var out []string
	for _, l := range r.lines() {
		out = append(out, fmt.Sprint(l["outcome"]))
	}
	return out
}

func TestResumeWithPrefix(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  breakKind
		after int
	}{
		{"cut after 40", cutAt, 40},
		{"cut after 20", cutAt, 20},
		{"stalled after 40", stallAt, 40},
		{"error event after 40", errorAt, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWordy(t, dialect.Anthropic, []breakKind{tc.kind}, []int{tc.after})
			r := newResumeRig(t, dialect.Anthropic, w, 2)
			_, got := r.stream(t)
			text, a, e := read(t, dialect.Anthropic, got)
			if e != nil || text != wordsText {
				t.Fatalf("the client got %q, error %v; want the 60 words once\n%s", text, e, got)
			}
			if w.calls() != 2 {
				t.Fatalf("%d upstream calls, want 2", w.calls())
			}
			sent := strings.Join(words[:tc.after], " ")
			if p := w.prefix(w.body(1)); p != sent {
				t.Errorf("the continuation's prefix is %q, want %q", p, sent)
			}
			if o := r.outcomes(); strings.Join(o, ",") != "resumed,ok" {
				t.Errorf("outcomes %v, want resumed then ok", o)
			}
			if a.Stop != chat.StopEndTurn {
				t.Errorf("stop %q, want end_turn", a.Stop)
			}
			if strings.Count(string(got), "event: message_start") != 1 {
				t.Errorf("the client got more than one message_start:\n%s", got)
			}
		})
	}
}

func TestResumeRefusedPrefixRestarts(t *testing.T) {
	w := newWordy(t, dialect.Anthropic, []breakKind{cutAt}, []int{40})
	w.refuse = true
	r := newResumeRig(t, dialect.Anthropic, w, 2)
	_, got := r.stream(t)
	text, _, e := read(t, dialect.Anthropic, got)
	if e != nil || text != wordsText {
		t.Fatalf("the client got %q, error %v; want the 60 words once", text, e)
	}
	if w.calls() != 3 {
		t.Fatalf("%d upstream calls, want 3: the cut one, the refused prefix, the restart", w.calls())
	}
	if p := w.prefix(w.body(2)); p != "" {
		t.Errorf("the restart carried the prefix %q", p)
	}
	if o := r.outcomes(); strings.Join(o, ",") != "resumed,retry,ok" {
		t.Errorf("outcomes %v, want resumed, retry, ok", o)
	}
}

func TestResumeRestartsWithoutPrefix(t *testing.T) {
	// OpenAI's API reads a final assistant message as a turn: the call
	// starts again, and what it repeats is not relayed twice.
	for _, after := range []int{40, 20} {
		w := newWordy(t, dialect.OpenAI, []breakKind{cutAt}, []int{after})
		r := newResumeRig(t, dialect.OpenAI, w, 2)
		_, got := r.stream(t)
		text, a, e := read(t, dialect.OpenAI, got)
		if e != nil || text != wordsText {
			t.Fatalf("after %d: the client got %q, error %v; want the 60 words once", after, text, e)
		}
		if n := strings.Count(string(got), `"role":"assistant"`); n != 1 {
			t.Errorf("after %d: the client's stream began %d times", after, n)
		}
		if w.calls() != 2 || w.prefix(w.body(1)) != "" {
			t.Fatalf("after %d: %d upstream calls, the second's prefix %q; want 2, none", after, w.calls(), w.prefix(w.body(1)))
		}
		if a.Usage.Output != int64(after)+60 || a.Usage.Input <= 10 {
			t.Errorf("after %d: usage %+v, want the two attempts' summed (output %d, input over 10)", after, a.Usage, after+60)
		}
	}
}

func TestResumeRestartThatDiffers(t *testing.T) {
	w := newWordy(t, dialect.OpenAI, []breakKind{cutAt, otherStart}, []int{40, 0})
	r := newResumeRig(t, dialect.OpenAI, w, 2)
	_, got := r.stream(t)
	text, _, e := read(t, dialect.OpenAI, got)
	if want := strings.Join(words[:40], " ") + " "; text != want {
		t.Errorf("the client got %q, want the 40 words sent before the break and nothing more", text)
	}
	if e == nil {
		t.Fatalf("the stream ended without an error event:\n%s", got)
	}
	if strings.Contains(string(got), "x01") {
		t.Errorf("the other text reached the client:\n%s", got)
	}
}

func TestResumeNeverAfterToolCall(t *testing.T) {
	for _, d := range []dialect.Dialect{dialect.Anthropic, dialect.OpenAI} {
		w := newWordy(t, d, []breakKind{toolCutAt}, []int{0})
		r := newResumeRig(t, d, w, 2)
		_, got := r.stream(t)
		if _, _, e := read(t, d, got); e == nil {
			t.Errorf("%s: a cut tool-call stream ended clean:\n%s", d.Kind(), got)
		}
		if w.calls() != 1 {
			t.Errorf("%s: %d upstream calls, want 1: a tool call is never resumed", d.Kind(), w.calls())
		}
	}
}

func TestResumeOff(t *testing.T) {
	w := newWordy(t, dialect.Anthropic, []breakKind{cutAt}, []int{40})
	r := newResumeRig(t, dialect.Anthropic, w, 2)
	r.tr.Policy.Resume = false
	req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(`{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"count"}]}`))
	resp, err := r.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || w.calls() != 1 {
		t.Fatalf("without resume: read error %v after %d calls; want the cut, 1 call", err, w.calls())
	}
}

func TestResumeMax(t *testing.T) {
	w := newWordy(t, dialect.Anthropic, []breakKind{cutAt, cutAt, cutAt}, []int{10, 10, 10})
	r := newResumeRig(t, dialect.Anthropic, w, 5)
	_, got := r.stream(t)
	if _, _, e := read(t, dialect.Anthropic, got); e == nil {
		t.Fatalf("two cuts under resume_max 1 ended clean:\n%s", got)
	}
	if w.calls() != 2 {
		t.Fatalf("%d upstream calls, want 2 under resume_max 1", w.calls())
	}
	r2 := newResumeRig(t, dialect.Anthropic, newWordy(t, dialect.Anthropic, []breakKind{cutAt, cutAt}, []int{10, 10}), 5)
	r2.tr.Policy.ResumeMax = 2
	_, got = r2.stream(t)
	if text, _, e := read(t, dialect.Anthropic, got); e != nil || text != wordsText {
		t.Fatalf("two cuts under resume_max 2: %q, %v", text, e)
	}
	if o := r2.outcomes(); strings.Join(o, ",") != "resumed,resumed,ok" {
		t.Errorf("outcomes %v", o)
	}
}

func TestResumeOnFallback(t *testing.T) {
	// The primary breaks, and has no attempt left: the fallback, of the
	// same dialect or translated, continues from the prefix.
	for _, d := range []dialect.Dialect{dialect.Anthropic, dialect.OpenAI} {
		primary := newWordy(t, d, []breakKind{cutAt}, []int{40})
		backup := newWordy(t, dialect.Anthropic, nil, nil)
		r := newResumeRig(t, d, primary, 1, to("backup", "claude-haiku-4-5", dialect.Anthropic, backup.srv.URL))
		_, got := r.stream(t)
		text, _, e := read(t, d, got)
		if e != nil || text != wordsText {
			t.Fatalf("%s client: got %q, error %v", d.Kind(), text, e)
		}
		if primary.calls() != 1 || backup.calls() != 1 {
			t.Fatalf("%s client: calls %d and %d, want 1 and 1", d.Kind(), primary.calls(), backup.calls())
		}
		if p := backup.prefix(backup.body(0)); p != strings.Join(words[:40], " ") {
			t.Errorf("%s client: the fallback's prefix is %q", d.Kind(), p)
		}
		lines := r.lines()
		if len(lines) != 2 || lines[0]["outcome"] != "resumed" || lines[1]["provider"] != "backup" || lines[1]["outcome"] != "ok" {
			t.Errorf("%s client: lines %v", d.Kind(), lines)
		}
	}
}

// Every way out of a resumed call gives back what it took: its
// concurrency slot, its money, its retries and attempts in the budget,
// and its spans; no goroutine is left.
func TestEveryWayOutOfAResume(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plan  []breakKind
		after []int
		// out reads the call's body and leaves it as the way out does.
		out   func(t *testing.T, body io.ReadCloser)
		total time.Duration
		last  Outcome // the last line's
	}{
		{"resumed whole", []breakKind{cutAt}, []int{40}, readToEnd, 0, OutcomeOK},
		{"caller leaves mid-continuation", []breakKind{cutAt, stallAt}, []int{10, 5}, readThenClose, 0, OutcomeClientCancel},
		{"caller closes between reads of the continuation", []breakKind{cutAt, stallAt}, []int{10, 15}, closeAfter("w13"), 0, OutcomeClientCancel},
		{"caller leaves while the continuation is awaited", []breakKind{cutAt, hangs}, []int{10, 0}, readThenClose, 0, OutcomeClientCancel},
		{"total runs out while the continuation is awaited", []breakKind{cutAt, hangs}, []int{10, 0}, readToEnd, 700 * time.Millisecond, OutcomeTimeout},
		{"continuation refused", []breakKind{cutAt, fails}, []int{10, 0}, readToEnd, 0, OutcomeFail},
		{"continuation breaks too", []breakKind{cutAt, cutAt}, []int{10, 5}, readToEnd, 0, OutcomeFail},
		{"restart differs", []breakKind{cutAt, otherStart}, []int{10, 0}, readToEnd, 0, OutcomeFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			leaktest.Check(t)
			w := newWordy(t, dialect.OpenAI, tc.plan, tc.after)
			r := newResumeRig(t, dialect.OpenAI, w, 2)
			r.tr.Policy.Timeout.FirstByte, r.tr.Policy.Timeout.Idle = 8*time.Second, 8*time.Second // only the way out ends it
			if tc.total > 0 {
				r.tr.Policy.Timeout.Total = tc.total
			}
			lim := &limit.Limiter{Limits: []limit.Limit{{Name: "conc", Scope: "all", Concurrent: 1}}}
			h := &heldRig{rig: r.rig, tracer: &countingTracer{}, budget: &RetryBudget{}, lim: lim, meter: &holdMeter{}}
			r.tr.Limiter, r.tr.Meter, r.tr.Tracer, r.tr.RetryBudget = h.lim, h.meter, h.tracer, h.budget
			req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(
				`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"count"}]}`))
			start := time.Now()
			resp, err := r.tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			tc.out(t, resp.Body)
			if took := time.Since(start); took > 3*time.Second { // the phases and the total are 8s and 10s
				t.Errorf("the call took %v: what ended it did not end its continuation", took)
			}
			h.check(t)
			lines := r.lines()
			if len(lines) != w.calls() {
				t.Errorf("%d log lines for %d upstream calls: %v", len(lines), w.calls(), lines)
			}
			if len(lines) < 2 || lines[0]["outcome"] != string(OutcomeResumed) || lines[len(lines)-1]["outcome"] != string(tc.last) {
				t.Errorf("lines %v, want the first resumed, the last %s", lines, tc.last)
			}
		})
	}
}

func readToEnd(t *testing.T, body io.ReadCloser) {
	io.Copy(io.Discard, body)
	body.Close()
}

// readThenClose reads the stream's first bytes, then closes it while
// another read waits for more.
func readThenClose(t *testing.T, body io.ReadCloser) {
	io.ReadFull(body, make([]byte, 300))
	time.AfterFunc(100*time.Millisecond, func() { body.Close() })
	io.Copy(io.Discard, body)
}

// closeAfter reads the stream until it holds marker, then closes it.
func closeAfter(marker string) func(*testing.T, io.ReadCloser) {
	return func(t *testing.T, body io.ReadCloser) {
		var got []byte
		buf := make([]byte, 64)
		for !strings.Contains(string(got), marker) {
			n, err := body.Read(buf)
			got = append(got, buf[:n]...)
			if err != nil {
				t.Fatalf("the stream ended before %s: %v", marker, err)
			}
		}
		body.Close()
	}
}

// The call's cost is the sum of its attempts', each priced for what it
// answered, and the caller's usage the sum of theirs.
func TestResumedCostIsTheSum(t *testing.T) {
	w := newWordy(t, dialect.OpenAI, []breakKind{cutAt}, []int{40})
	r := newResumeRig(t, dialect.OpenAI, w, 2)
	r.tr.Meter = &spend.Meter{Prices: tenCents}
	_, got := r.stream(t)
	if text, _, e := read(t, dialect.OpenAI, got); e != nil || text != wordsText {
		t.Fatalf("got %q, %v", text, e)
	}
	lines := r.lines()
	if len(lines) != 2 {
		t.Fatalf("lines %v", lines)
	}
	c1, _ := lines[0]["cost_usd"].(float64)
	c2, _ := lines[1]["cost_usd"].(float64)
	if c1 <= 0 || c2 <= 0 || c2 < c1 {
		t.Errorf("costs %v and %v: want the broken attempt's priced, and the whole answer's more", c1, c2)
	}
}
