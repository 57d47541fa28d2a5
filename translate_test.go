package sluice

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/sse"
)

// xlRig is a Transport speaking the client's dialect to a primary fake
// provider that is down, with fallbacks of other dialects.
type xlRig struct {
	tr      *Transport
	primary *fake.Server
	logs    *lockedBuffer
	url     string // the client's endpoint on the primary
}

func newXLRig(t *testing.T, client dialect.Dialect, path string, targets ...Target) *xlRig {
	t.Helper()
	primary := fake.NewServer("503")
	t.Cleanup(primary.Close)
	logs := &lockedBuffer{}
	p := fastPolicy()
	p.Retry.MaxAttempts = 1
	tr := &Transport{Policy: p, Provider: "primary", Dialect: client, Log: NewAttemptLog(logs), Fallbacks: targets}
	return &xlRig{tr: tr, primary: primary, logs: logs, url: primary.URL + path}
}

// to returns a Target of dialect d at the server srv.
func to(name, model string, d dialect.Dialect, srv string) Target {
	u, _ := url.Parse(srv)
	return Target{Provider: name, Model: model, Dialect: d, Rewrite: func(r *http.Request) {
		r.URL.Scheme, r.URL.Host, r.Host = u.Scheme, u.Host, u.Host
	}}
}

func (r *xlRig) post(t *testing.T, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, b
}

// collect reads a client's SSE stream with the client's own codec.
func collect(t *testing.T, c chat.Codec, stream []byte) (*chat.Answer, *chat.Error, bool) {
	t.Helper()
	var p sse.Parser
	dec := c.NewStreamDecoder()
	var col chat.Collector
	var evs []chat.Event
	p.Feed(stream, func(ev sse.Event) bool {
		var err error
		evs, err = dec.Decode(evs[:0], chat.Frame{Event: ev.Type, Data: ev.Data})
		if err != nil {
			t.Fatalf("the client's codec cannot read %q: %v", ev.Data, err)
		}
		for _, e := range evs {
			if err := col.Add(e); err != nil {
				t.Fatal(err)
			}
		}
		return true
	})
	for _, e := range dec.End(evs[:0]) {
		col.Add(e)
	}
	a, e := col.Answer()
	return a, e, col.Done()
}

const fakeText = "This is a fake answer."

// isOpenAIError reports whether body is an error in OpenAI's shape and no
// other: {"error":{"message","type","param","code"}} and nothing beside.
func isOpenAIError(body []byte) bool {
	var w map[string]map[string]any
	if json.Unmarshal(body, &w) != nil || len(w) != 1 {
		return false
	}
	e := w["error"]
	_, param := e["param"]
	_, code := e["code"]
	msg, _ := e["message"].(string)
	typ, _ := e["type"].(string)
	return len(e) == 4 && param && code && msg != "" && typ != ""
}

// An OpenAI client whose primary is down is answered by an Anthropic
// fallback, and an Anthropic client by an OpenAI one, in the client's own
// shape, whole and streamed; the target is asked at its own endpoint, for
// its model, and the Meter's view is the target's.
func TestTranslatedFallbackAnswers(t *testing.T) {
	for _, tt := range []struct {
		name         string
		client       dialect.Dialect
		codec        chat.Codec
		path         string
		target       dialect.Dialect
		targetPath   string
		model, label string
		body         string
	}{
		{"openai->anthropic", dialect.OpenAI, chat.OpenAI, "/v1/chat/completions", dialect.Anthropic, "/v1/messages",
			"claude-haiku-4-5", "openai->anthropic",
			`{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
		{"anthropic->openai", dialect.Anthropic, chat.Anthropic, "/v1/messages", dialect.OpenAI, "/v1/chat/completions",
			"gpt-4o-mini", "anthropic->openai",
			`{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
		{"openai->gemini", dialect.OpenAI, chat.OpenAI, "/v1/chat/completions", dialect.Gemini, "/v1beta/models/gemini-2.0-flash:generateContent",
			"gemini-2.0-flash", "openai->gemini",
			`{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		for _, stream := range []bool{false, true} {
			name := tt.name
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				backup := fake.NewServer("200")
				t.Cleanup(backup.Close)
				r := newXLRig(t, tt.client, tt.path, to("backup", tt.model, tt.target, backup.URL))
				body := tt.body
				if stream {
					body = strings.Replace(body, `{`, `{"stream":true,`, 1)
					if tt.client == dialect.OpenAI {
						body = strings.Replace(body, `{`, `{"stream_options":{"include_usage":true},`, 1)
					}
				}
				resp, got := r.post(t, body)
				if resp.StatusCode != 200 {
					t.Fatalf("status %d: %s", resp.StatusCode, got)
				}
				if h := resp.Header.Get("Sluice-Translated"); h != tt.label {
					t.Errorf("Sluice-Translated %q, want %q", h, tt.label)
				}
				var said []string // each line's translated field
				for l := range strings.Lines(r.logs.String()) {
					var line struct{ Translated string }
					if err := json.Unmarshal([]byte(l), &line); err != nil {
						t.Fatal(err)
					}
					said = append(said, line.Translated)
				}
				if len(said) != 2 || said[0] != "" || said[1] != tt.label {
					t.Errorf("the lines' translated fields %q, want the fallback's alone to say %s", said, tt.label)
				}
				if p, m := resp.Header.Get("Sluice-Provider"), resp.Header.Get("Sluice-Model"); p != "backup" || m != tt.model {
					t.Errorf("answered by %s %s, want backup %s", p, m, tt.model)
				}
				if r.primary.Provider.Calls() != 1 || backup.Provider.Calls() != 1 {
					t.Errorf("calls: primary %d, backup %d; want 1 and 1", r.primary.Provider.Calls(), backup.Provider.Calls())
				}
				sent := backup.Provider.Requests()[0]
				wantPath := tt.targetPath
				if stream && tt.target == dialect.Gemini {
					wantPath = strings.Replace(wantPath, ":generateContent", ":streamGenerateContent", 1)
				}
				if sent.Path != wantPath {
					t.Errorf("the target was asked at %s, want %s", sent.Path, wantPath)
				}
				var a *chat.Answer
				if stream {
					if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
						t.Errorf("Content-Type %q", ct)
					}
					var e *chat.Error
					var done bool
					a, e, done = collect(t, tt.codec, got)
					if e != nil || !done {
						t.Fatalf("stream ended with %v, done %v:\n%s", e, done, got)
					}
				} else {
					var err error
					if a, err = tt.codec.DecodeAnswer(got); err != nil {
						t.Fatalf("the client's codec cannot read %s: %v", got, err)
					}
				}
				if len(a.Content) != 1 || a.Content[0].Text != fakeText {
					t.Errorf("content %+v, want the fake's text", a.Content)
				}
				if a.Stop != chat.StopEndTurn {
					t.Errorf("stop %q, want end_turn", a.Stop)
				}
				if a.Usage.Output == 0 || a.Usage.Prompt() == 0 {
					t.Errorf("usage %+v: the target's counts lost", a.Usage)
				}
			})
		}
	}
}

// A request the target's dialect cannot express skips it without a call,
// with one line saying why; the next target answers, and when every
// fallback is skipped the client gets the primary's own failure.
func TestTranslatedFallbackSkips(t *testing.T) {
	anthropic := fake.NewServer("200")
	t.Cleanup(anthropic.Close)
	openai := fake.NewServer("200")
	t.Cleanup(openai.Close)
	// Two choices: Anthropic answers one.
	const body = `{"model":"gpt-4o","n":2,"messages":[{"role":"user","content":"hi"}]}`

	r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions",
		to("anthropic", "claude-haiku-4-5", dialect.Anthropic, anthropic.URL), to("openai", "gpt-4o-mini", nil, openai.URL))
	resp, got := r.post(t, body)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "openai" {
		t.Fatalf("status %d from %s: %s", resp.StatusCode, resp.Header.Get("Sluice-Provider"), got)
	}
	if resp.Header.Get("Sluice-Translated") != "" {
		t.Errorf("an untranslated answer says Sluice-Translated: %s", resp.Header.Get("Sluice-Translated"))
	}
	if n := anthropic.Provider.Calls(); n != 0 {
		t.Errorf("the skipped target got %d calls", n)
	}
	var lines []Attempt
	for _, l := range strings.Split(strings.TrimSpace(r.logs.String()), "\n") {
		var a Attempt
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		lines = append(lines, a)
	}
	if len(lines) != 3 || lines[1].Outcome != OutcomeSkipped || lines[1].Provider != "anthropic" ||
		!strings.HasPrefix(lines[1].Error, "skipped: ") || !strings.Contains(lines[1].Error, "n 2") {
		t.Errorf("log lines %+v, want a skipped line for anthropic between two attempts", lines)
	}

	r = newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("anthropic", "claude-haiku-4-5", dialect.Anthropic, anthropic.URL))
	resp, got = r.post(t, body)
	if resp.StatusCode != 503 || resp.Header.Get("Sluice-Provider") != "primary" || resp.Header.Get("Sluice-Translated") != "" {
		t.Errorf("status %d from %s (%s): %s; want the primary's own 503", resp.StatusCode,
			resp.Header.Get("Sluice-Provider"), resp.Header.Get("Sluice-Translated"), got)
	}
	if e := chat.OpenAI.DecodeError(resp.StatusCode, got); e == nil || e.Message == "" {
		t.Errorf("the primary's answer %s is not its own error", got)
	}
	if n := anthropic.Provider.Calls(); n != 0 {
		t.Errorf("the skipped target got %d calls", n)
	}
}

// A target's error answer is judged as the target wrote it and handed
// over in the client's shape; a stream that fails mid-way or is cut ends
// with the client's error event, never its clean end.
func TestTranslatedFallbackErrors(t *testing.T) {
	const body = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	t.Run("status", func(t *testing.T) {
		backup := fake.NewServer("429:insufficient_quota")
		t.Cleanup(backup.Close)
		r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("backup", "claude-haiku-4-5", dialect.Anthropic, backup.URL))
		resp, got := r.post(t, body)
		if resp.StatusCode != 429 || resp.Header.Get("Sluice-Translated") != "openai->anthropic" {
			t.Fatalf("status %d (%s): %s", resp.StatusCode, resp.Header.Get("Sluice-Translated"), got)
		}
		if !isOpenAIError(got) {
			t.Errorf("error %s is not OpenAI's shape", got)
		}
		if backup.Provider.Calls() != 1 { // a quota is not retried: judged as Anthropic's
			t.Errorf("backup calls %d, want 1", backup.Provider.Calls())
		}
	})
	// A stream whose bytes end cleanly before its end: its last event
	// never came.
	early := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-haiku-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":1}}}\n\n")
		io.WriteString(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"This is\"}}\n\n")
	}))
	t.Cleanup(early.Close)
	for _, tt := range []struct{ name, script, url string }{
		{"error event", "stream:events=6;error-after=4", ""},
		{"cut", "stream:events=6;cut-after=4", ""},
		{"early end", "", early.URL},
	} {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.url
			if u == "" {
				backup := fake.NewServer(tt.script)
				t.Cleanup(backup.Close)
				u = backup.URL
			}
			r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("backup", "claude-haiku-4-5", dialect.Anthropic, u))
			req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(strings.Replace(body, "{", `{"stream":true,`, 1)))
			resp, err := r.tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			got, readErr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if bytes.Contains(got, []byte("[DONE]")) {
				t.Errorf("a failed stream ends clean:\n%s", got)
			}
			// The error is in the bytes (an error event), or the read
			// fails: a client never takes it for a whole answer.
			var errEvent bool
			var p sse.Parser
			p.Feed(got, func(ev sse.Event) bool {
				errEvent = errEvent || isOpenAIError(ev.Data)
				return true
			})
			if !errEvent && readErr == nil {
				t.Errorf("stream ended with neither an error event nor a read error:\n%s", got)
			}
			if a, _, _ := collect(t, chat.OpenAI, got); len(a.Content) == 0 {
				t.Errorf("the text before the failure was lost: %s", got)
			}
		})
	}
}

// A tool call, whole and streamed with its arguments in pieces, reaches
// an OpenAI client from an Anthropic target with its id, name and
// arguments.
func TestTranslatedToolCall(t *testing.T) {
	const args = `{"city":"Paris","days":3}`
	anthropic := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Contains(b, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5",`+
				`"content":[{"type":"tool_use","id":"toolu_01","name":"weather","input":`+args+`}],`+
				`"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":7}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(typ, data string) { io.WriteString(w, "event: "+typ+"\ndata: "+data+"\n\n") }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_01","name":"weather","input":{}}}`)
		for _, piece := range []string{`{"city":`, `"Paris","da`, `ys":3}`} {
			b, _ := json.Marshal(piece)
			ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":`+string(b)+`}}`)
		}
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}`)
		ev("message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(anthropic.Close)
	const body = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"weather?"}],` +
		`"tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"days":{"type":"integer"}}}}}]}`
	for _, stream := range []bool{false, true} {
		r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("backup", "claude-haiku-4-5", dialect.Anthropic, anthropic.URL))
		b := body
		if stream {
			b = strings.Replace(b, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1)
		}
		resp, got := r.post(t, b)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, got)
		}
		var a *chat.Answer
		if stream {
			var e *chat.Error
			var done bool
			if a, e, done = collect(t, chat.OpenAI, got); e != nil || !done {
				t.Fatalf("stream ended with %v, done %v:\n%s", e, done, got)
			}
		} else {
			var err error
			if a, err = chat.OpenAI.DecodeAnswer(got); err != nil {
				t.Fatal(err)
			}
		}
		if len(a.Content) != 1 || a.Content[0].ToolCall == nil {
			t.Fatalf("stream %v: content %+v, want one tool call:\n%s", stream, a.Content, got)
		}
		tc := a.Content[0].ToolCall
		if tc.ID != "toolu_01" || tc.Name != "weather" || string(tc.Args) != args {
			t.Errorf("stream %v: tool call %s %s %s", stream, tc.ID, tc.Name, tc.Args)
		}
		if a.Stop != chat.StopToolUse || a.Usage.Input != 12 || a.Usage.Output != 7 {
			t.Errorf("stream %v: stop %q, usage %+v", stream, a.Stop, a.Usage)
		}
	}
}

// xlMeter records what the Meter is told of each answer: its dialect,
// its model and the usage in the bytes it was fed.
type xlMeter struct {
	mu    sync.Mutex
	seen  []string
	usage []dialect.Usage
}

func (m *xlMeter) Reserve(hook.Ask) (float64, func(float64), error) { return -1, func(float64) {}, nil }

func (m *xlMeter) Count(d dialect.Dialect, model string, stream bool, _ int) (func([]byte), func() (float64, int64)) {
	var buf bytes.Buffer
	return func(p []byte) { buf.Write(p) }, func() (float64, int64) {
		var u dialect.Usage
		if stream {
			r := d.StreamUsage()
			r.Write(buf.Bytes())
			u, _ = r.Usage()
		} else {
			u, _ = d.Usage(buf.Bytes())
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		m.seen = append(m.seen, d.Kind()+" "+model)
		m.usage = append(m.usage, u)
		return 0, u.Output
	}
}

// The Meter counts the target's answer as the target wrote it, for the
// model that answered, whole and streamed.
func TestTranslatedFallbackMetered(t *testing.T) {
	for _, stream := range []bool{false, true} {
		backup := fake.NewServer("200")
		t.Cleanup(backup.Close)
		r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("backup", "claude-haiku-4-5", dialect.Anthropic, backup.URL))
		m := &xlMeter{}
		r.tr.Meter = m
		body := `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
		if stream {
			body = strings.Replace(body, "{", `{"stream":true,`, 1)
		}
		if resp, got := r.post(t, body); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, got)
		}
		if len(m.seen) != 1 || m.seen[0] != "anthropic claude-haiku-4-5" {
			t.Errorf("stream %v: the Meter priced %v, want the Anthropic answer of claude-haiku-4-5", stream, m.seen)
		}
		if len(m.usage) != 1 || m.usage[0].Output == 0 || m.usage[0].Input == 0 {
			t.Errorf("stream %v: the Meter read usage %+v from the bytes it was fed", stream, m.usage)
		}
	}
}

// A target's error is judged by its own dialect: Gemini's per-day quota
// is not retried, though the client's dialect would retry a plain 429.
func TestTranslatedErrorJudgedByTarget(t *testing.T) {
	backup := fake.NewServer("429:insufficient_quota")
	t.Cleanup(backup.Close)
	r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("backup", "gemini-2.0-flash", dialect.Gemini, backup.URL))
	r.tr.Policy.Retry.MaxAttempts = 3
	resp, got := r.post(t, `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	if n := backup.Provider.Calls(); n != 1 {
		t.Errorf("the quota was tried %d times, want once", n)
	}
	if !isOpenAIError(got) {
		t.Errorf("error %s is not in OpenAI's shape", got)
	}
}

// A request that names no output limit is given DefaultTranslatedMaxTokens
// for a target that requires one (Anthropic), and answered there.
func TestTranslatedMaxTokensDefault(t *testing.T) {
	backup := fake.NewServer("200")
	t.Cleanup(backup.Close)
	r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("backup", "claude-haiku-4-5", dialect.Anthropic, backup.URL))
	resp, got := r.post(t, `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "backup" {
		t.Fatalf("status %d from %s: %s", resp.StatusCode, resp.Header.Get("Sluice-Provider"), got)
	}
	sent := backup.Provider.Requests()
	if len(sent) != 1 {
		t.Fatalf("%d calls to the fallback, want 1", len(sent))
	}
	var b struct {
		MaxTokens int64 `json:"max_tokens"`
	}
	if err := json.Unmarshal(sent[0].Body, &b); err != nil || b.MaxTokens != DefaultTranslatedMaxTokens {
		t.Errorf("the fallback was sent max_tokens %d (%v), want %d", b.MaxTokens, err, DefaultTranslatedMaxTokens)
	}
}
