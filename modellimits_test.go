package sluice

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/fake"
)

// limitBodies are OpenAI requests for gpt-4o, each asking one thing a
// model may be declared without.
const (
	limitPlain  = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"What is the weather in Paris today?"}]}`
	limitTools  = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}]}`
	limitImage  = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]}`
	limitSchema = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"Weather in Paris?"}],"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"}}}}`
	limitLong   = `{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"one two three four five six seven eight nine ten eleven twelve"}]}`
	limitOutput = `{"model":"gpt-4o","max_tokens":5000,"messages":[{"role":"user","content":"Write a long story."}]}`
)

// attemptLines returns the attempt log's lines.
func attemptLines(t *testing.T, logs *lockedBuffer) []Attempt {
	t.Helper()
	var out []Attempt
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var a Attempt
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		out = append(out, a)
	}
	return out
}

// outcomes returns each line's provider and outcome, as provider:outcome.
func outcomes(lines []Attempt) []string {
	var out []string
	for _, a := range lines {
		out = append(out, a.Provider+":"+string(a.Outcome))
	}
	return out
}

// A fallback whose model is declared unable to take the request is
// skipped without a call, with a line that says why, and the next answers;
// a request it can take goes to it. Each rule once: tools, images, a JSON
// schema, the context, the output.
func TestModelLimitsSkipFallback(t *testing.T) {
	for _, tt := range []struct {
		name        string
		lim         ModelLimits
		breaks      string // a request the model cannot take
		fits        string // one it can
		why         string // in the skipped line's error
		lacks       chat.Feature
		limit       string
		need, limOf int64
	}{
		{"tools", ModelLimits{Model: "small-1", Lacks: []chat.Feature{chat.FeatureTools}}, limitTools, limitPlain,
			"model small-1 is declared without tools", chat.FeatureTools, "", 0, 0},
		{"images", ModelLimits{Model: "small-1", Lacks: []chat.Feature{chat.FeatureImages}}, limitImage, limitTools,
			"model small-1 is declared without images", chat.FeatureImages, "", 0, 0},
		{"json schema", ModelLimits{Model: "small-1", Lacks: []chat.Feature{chat.FeatureJSONSchema}}, limitSchema, limitImage,
			"model small-1 is declared without json_schema", chat.FeatureJSONSchema, "", 0, 0},
		{"context", ModelLimits{Model: "small-*", Context: 11}, limitLong, limitPlain,
			"the request holds at least 12 tokens; model small-1 is declared with a context of 11", "", "context", 12, 11},
		{"output", ModelLimits{Model: "small-1", Output: 4096}, limitOutput, limitPlain,
			"the request asks for up to 5000 output tokens; model small-1 is declared to write at most 4096", "", "output", 5000, 4096},
	} {
		t.Run(tt.name, func(t *testing.T) {
			small, big := fake.NewServer("200"), fake.NewServer("200")
			t.Cleanup(small.Close)
			t.Cleanup(big.Close)
			sm := to("small", "small-1", nil, small.URL)
			sm.Models = []ModelLimits{{Model: "other-*", Context: 1}, tt.lim}
			r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", sm, to("big", "big-1", nil, big.URL))

			resp, got := r.post(t, tt.breaks)
			if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "big" {
				t.Fatalf("status %d from %s: %s; want big's answer", resp.StatusCode, resp.Header.Get("Sluice-Provider"), got)
			}
			if n := small.Provider.Calls(); n != 0 {
				t.Errorf("the skipped target got %d calls", n)
			}
			if n := big.Provider.Calls(); n != 1 {
				t.Errorf("the next target got %d calls, want 1", n)
			}
			lines := attemptLines(t, r.logs)
			if o := outcomes(lines); !slices.Equal(o, []string{"primary:retry", "small:skipped", "big:ok"}) {
				t.Fatalf("lines %v, want the primary's failure, small skipped, big's answer", o)
			}
			if l := lines[1]; l.Error != "skipped: sluice: "+tt.why || l.Model != "small-1" {
				t.Errorf("skipped line: error %q model %q; want %q for small-1", l.Error, l.Model, "skipped: sluice: "+tt.why)
			}

			r.logs = &lockedBuffer{}
			r.tr = &Transport{Policy: r.tr.Policy, Provider: "primary", Log: NewAttemptLog(r.logs), Fallbacks: r.tr.Fallbacks}
			resp, got = r.post(t, tt.fits)
			if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "small" || small.Provider.Calls() != 1 {
				t.Errorf("a request it can take: status %d from %s, small's calls %d: %s; want small's answer",
					resp.StatusCode, resp.Header.Get("Sluice-Provider"), small.Provider.Calls(), got)
			}
		})
	}
}

// The primary is checked too, when a fallback follows: skipped without a
// call or a rate-limit slot, the fallback answers. With no fallback it is
// never checked: the request goes to it, one line.
func TestModelLimitsSkipPrimary(t *testing.T) {
	big := fake.NewServer("200")
	t.Cleanup(big.Close)
	r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("big", "big-1", nil, big.URL))
	r.tr.Models = []ModelLimits{{Model: "gpt-4o", Lacks: []chat.Feature{chat.FeatureTools}}}
	lim := &stubLimiter{}
	r.tr.Limiter = lim
	resp, got := r.post(t, limitTools)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "big" {
		t.Fatalf("status %d from %s: %s; want big's answer", resp.StatusCode, resp.Header.Get("Sluice-Provider"), got)
	}
	if n := r.primary.Provider.Calls(); n != 0 {
		t.Errorf("the skipped primary got %d calls", n)
	}
	lines := attemptLines(t, r.logs)
	if o := outcomes(lines); !slices.Equal(o, []string{"primary:skipped", "big:ok"}) {
		t.Fatalf("lines %v, want the primary skipped, then big's answer", o)
	}
	if e := lines[0].Error; e != "skipped: sluice: model gpt-4o is declared without tools" {
		t.Errorf("the primary's line says %q", e)
	}
	lim.mu.Lock()
	waits, dones := lim.waits, lim.dones
	lim.mu.Unlock()
	if len(waits) != 1 || waits[0].provider != "big" || dones != 1 {
		t.Errorf("rate-limit waits %+v (%d given back); want one, for big, given back", waits, dones)
	}

	alone := newXLRig(t, dialect.OpenAI, "/v1/chat/completions")
	alone.tr.Models = r.tr.Models
	resp, _ = alone.post(t, limitTools)
	if resp.StatusCode != 503 || alone.primary.Provider.Calls() != 1 {
		t.Errorf("a primary without fallbacks: status %d, %d calls; want its own 503 from one call", resp.StatusCode, alone.primary.Provider.Calls())
	}
	if o := outcomes(attemptLines(t, alone.logs)); !slices.Equal(o, []string{"primary:fail"}) {
		t.Errorf("lines %v, want the primary's one attempt", o)
	}
}

// When every target is skipped, the primary among them, the primary is
// called after all: the client gets its own answer, as when every
// fallback of another dialect is skipped.
func TestModelLimitsEverySkipped(t *testing.T) {
	small := fake.NewServer("200")
	t.Cleanup(small.Close)
	anthropic := fake.NewServer("200")
	t.Cleanup(anthropic.Close)
	sm := to("small", "small-1", nil, small.URL)
	sm.Models = []ModelLimits{{Model: "small-*", Lacks: []chat.Feature{chat.FeatureTools}}}
	r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", sm, to("anthropic", "claude-haiku-4-5", dialect.Anthropic, anthropic.URL))
	r.tr.Models = []ModelLimits{{Model: "gpt-*", Lacks: []chat.Feature{chat.FeatureTools}}}
	// Tools for every model, and n 2 that Anthropic cannot express.
	body := strings.Replace(limitTools, `"max_tokens":64`, `"max_tokens":64,"n":2`, 1)
	resp, got := r.post(t, body)
	if resp.StatusCode != 503 || resp.Header.Get("Sluice-Provider") != "primary" || resp.Header.Get("Sluice-Model") != "gpt-4o" {
		t.Fatalf("status %d from %s %s: %s; want the primary's own 503", resp.StatusCode,
			resp.Header.Get("Sluice-Provider"), resp.Header.Get("Sluice-Model"), got)
	}
	if e := chat.OpenAI.DecodeError(resp.StatusCode, got); e == nil || e.Message == "" {
		t.Errorf("the answer %s is not the primary's own error", got)
	}
	if p, s, a := r.primary.Provider.Calls(), small.Provider.Calls(), anthropic.Provider.Calls(); p != 1 || s != 0 || a != 0 {
		t.Errorf("calls: primary %d, small %d, anthropic %d; want 1, 0, 0", p, s, a)
	}
	lines := attemptLines(t, r.logs)
	if o := outcomes(lines); !slices.Equal(o, []string{"primary:skipped", "small:skipped", "anthropic:skipped", "primary:fail"}) {
		t.Fatalf("lines %v, want every target skipped, then the primary's attempt", o)
	}
	if !strings.Contains(lines[2].Error, "n 2") {
		t.Errorf("anthropic's line says %q, want its dialect's reason", lines[2].Error)
	}

	// The primary not skipped: every fallback skipped, its own failure.
	r = newXLRig(t, dialect.OpenAI, "/v1/chat/completions", sm)
	resp, _ = r.post(t, limitTools)
	if resp.StatusCode != 503 || resp.Header.Get("Sluice-Provider") != "primary" || r.primary.Provider.Calls() != 1 {
		t.Errorf("status %d from %s, %d calls; want the primary's 503 from one call", resp.StatusCode, resp.Header.Get("Sluice-Provider"), r.primary.Provider.Calls())
	}
	if o := outcomes(attemptLines(t, r.logs)); !slices.Equal(o, []string{"primary:retry", "small:skipped"}) {
		t.Errorf("lines %v", o)
	}

	// Skipped, then refused by its breaker: nothing called, the error
	// names the skip.
	r = newXLRig(t, dialect.OpenAI, "/v1/chat/completions", sm)
	r.tr.Policy.Breaker.Failures, r.tr.Policy.Breaker.Cool = 1, time.Hour
	p, err := r.tr.Breaker("primary").Allow()
	if err != nil {
		t.Fatal(err)
	}
	p.Done(breaker.Failure, time.Millisecond)
	req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(limitTools))
	_, err = r.tr.RoundTrip(req)
	var skipped *SkippedError
	var le *LimitError
	if !errors.As(err, &skipped) || skipped.Provider != "small" || !errors.As(err, &le) || le.Lacks != chat.FeatureTools {
		t.Errorf("err %v; want small's SkippedError with its LimitError", err)
	}
}

// A fallback of another dialect is checked by its model's declaration
// too, once its dialect can express the request.
func TestModelLimitsTranslatedTarget(t *testing.T) {
	anthropic, big := fake.NewServer("200"), fake.NewServer("200")
	t.Cleanup(anthropic.Close)
	t.Cleanup(big.Close)
	an := to("anthropic", "claude-haiku-4-5", dialect.Anthropic, anthropic.URL)
	an.Models = []ModelLimits{{Model: "claude-haiku-*", Lacks: []chat.Feature{chat.FeatureImages}}}
	r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", an, to("big", "big-1", nil, big.URL))
	resp, got := r.post(t, limitImage)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "big" || anthropic.Provider.Calls() != 0 {
		t.Fatalf("status %d from %s, anthropic's calls %d: %s; want big's answer, anthropic skipped", resp.StatusCode,
			resp.Header.Get("Sluice-Provider"), anthropic.Provider.Calls(), got)
	}
	lines := attemptLines(t, r.logs)
	if l := lines[1]; l.Outcome != OutcomeSkipped || l.Error != "skipped: sluice: model claude-haiku-4-5 is declared without images" {
		t.Errorf("anthropic's line: %s %q", l.Outcome, l.Error)
	}
	r.tr = &Transport{Policy: r.tr.Policy, Provider: "primary", Dialect: dialect.OpenAI, Log: NewAttemptLog(&lockedBuffer{}), Fallbacks: r.tr.Fallbacks}
	resp, got = r.post(t, limitTools)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Translated") != "openai->anthropic" || anthropic.Provider.Calls() != 1 {
		t.Errorf("a request it can take: status %d (%s): %s; want anthropic's answer, translated", resp.StatusCode,
			resp.Header.Get("Sluice-Translated"), got)
	}
	// A request that names no output limit is given the model's declared
	// one, when less than the default Anthropic needs one of.
	r.tr.Fallbacks[0].Models[0].Output = 1000
	r.post(t, strings.Replace(limitTools, `"max_tokens":64,`, "", 1))
	reqs := anthropic.Provider.Requests()
	if sent := string(reqs[len(reqs)-1].Body); !strings.Contains(sent, `"max_tokens":1000`) {
		t.Errorf("sent %s, want max_tokens 1000, the declared output", sent)
	}
}

// A fallback of the Transport's own provider (Provider empty) takes the
// Transport's declarations; one of another provider, only its own.
func TestModelLimitsSameProvider(t *testing.T) {
	other := fake.NewServer("200")
	t.Cleanup(other.Close)
	for _, tt := range []struct {
		name, provider string
		calls          int
	}{{"same provider", "", 0}, {"another provider", "other", 1}} {
		t.Run(tt.name, func(t *testing.T) {
			before := other.Provider.Calls()
			tg := to(tt.provider, "gpt-4o-mini", nil, other.URL)
			r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", tg)
			r.tr.Models = []ModelLimits{{Model: "gpt-4o-mini", Lacks: []chat.Feature{chat.FeatureTools}}}
			r.post(t, limitTools)
			if n := other.Provider.Calls() - before; n != tt.calls {
				t.Errorf("the fallback got %d calls, want %d", n, tt.calls)
			}
		})
	}
}

// A request the chat model does not hold (not a chat call) is sent:
// nothing says the model cannot take it.
func TestModelLimitsUnreadRequest(t *testing.T) {
	small := fake.NewServer("200")
	t.Cleanup(small.Close)
	r := newXLRig(t, dialect.OpenAI, "/v1/embeddings", to("small", "", nil, small.URL))
	r.tr.Models = []ModelLimits{{Model: "*", Context: 1, Lacks: []chat.Feature{chat.FeatureTools}}}
	resp, _ := r.post(t, `{"model":"text-embedding-3-small","input":["one two three","four five six"]}`)
	lines := attemptLines(t, r.logs)
	if o := outcomes(lines); resp.StatusCode != 404 || !slices.Equal(o, []string{"primary:fail"}) || lines[0].Status != 404 {
		t.Errorf("status %d, lines %v; want the primary's own 404 (the fake has no embeddings), one attempt", resp.StatusCode, o)
	}
	// A chat request the chat model cannot read: the provider judges it.
	r = newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("small", "", nil, small.URL))
	r.tr.Models = []ModelLimits{{Model: "*", Context: 1, Lacks: []chat.Feature{chat.FeatureTools}}}
	r.post(t, `{"model":"gpt-4o","messages":"one two three","tools":[{"type":"function","function":{"name":"f"}}]}`)
	if o := outcomes(attemptLines(t, r.logs)); len(o) == 0 || o[0] != "primary:retry" || r.primary.Provider.Calls() != 1 {
		t.Errorf("lines %v, primary calls %d; want the primary called", o, r.primary.Provider.Calls())
	}
}

// The request is read into the chat model only for a target whose model
// has a declaration that needs it.
func TestModelLimitsReadOnlyWhenDeclared(t *testing.T) {
	for _, tt := range []struct {
		name   string
		models []ModelLimits
		read   bool
	}{
		{"none", nil, false},
		{"another model", []ModelLimits{{Model: "claude-*", Context: 10}}, false},
		{"output, the max tokens known", []ModelLimits{{Model: "gpt-4o", Output: 100}}, false},
		{"context", []ModelLimits{{Model: "gpt-4o", Context: 100}}, true},
		{"lacks", []ModelLimits{{Model: "gpt-*", Lacks: []chat.Feature{chat.FeatureImages}}}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr := &Transport{Provider: "p", Models: tt.models, Fallbacks: []Target{{Provider: "q"}}}
			tr.init()
			req := httptest.NewRequest(http.MethodPost, "http://p.invalid/v1/chat/completions", nil)
			c := tr.newCall(req, Body{Bytes: []byte(limitPlain), Model: "gpt-4o", MaxTokens: 64})
			defer c.end()
			if read := c.xs != nil && c.xs.read; read != tt.read {
				t.Errorf("read %v, want %v", read, tt.read)
			}
			if c.xs != nil && c.xs.skip != nil {
				t.Errorf("skipped: %v", c.xs.skip)
			}
		})
	}
}

// A model takes its own declaration, else the longest prefix's, whole.
func TestModelLimitsOf(t *testing.T) {
	ms := []ModelLimits{{Model: "gpt-*", Context: 1}, {Model: "gpt-4o*", Context: 2}, {Model: "gpt-4o-mini", Context: 3}, {Model: "o1", Context: 4}}
	for model, want := range map[string]int64{"gpt-4o-mini": 3, "gpt-4o-mini-2024": 2, "gpt-4o": 2, "gpt-3.5": 1, "o1": 4, "o1-mini": 0, "claude": 0} {
		var got int64
		if m := limitsOf(ms, model); m != nil {
			got = m.Context
		}
		if got != want {
			t.Errorf("limitsOf(%q): the declaration of context %d, want %d", model, got, want)
		}
	}
}

// The estimate counts words: never more than a tokenizer's count.
func TestModelLimitsEstimate(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    chat.Request
		want int64
	}{
		{"prose", chat.Request{System: []chat.Part{chat.Text("Be brief.")},
			Messages: []chat.Message{{Role: chat.RoleUser, Parts: []chat.Part{chat.Text("  What is\tthe weather\n in Paris?  ")}}}}, 2 + 6},
		{"no spaces", chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Parts: []chat.Part{chat.Text("東京の天気は？")}}}}, 1},
		{"image", chat.Request{Messages: []chat.Message{{Role: chat.RoleUser, Parts: []chat.Part{{Type: chat.PartImage, Image: &chat.Image{Data: "aGVsbG8gd29ybGQ="}}}}}}, 0},
		{"tools, calls and results", chat.Request{
			Tools: []chat.Tool{{Name: "get_weather", Description: "The weather in a city", Parameters: json.RawMessage(`{"type": "object"}`)}},
			Messages: []chat.Message{
				{Role: chat.RoleAssistant, Parts: []chat.Part{{Type: chat.PartToolCall, ToolCall: &chat.ToolCall{Name: "get_weather", Args: json.RawMessage(`{"city": "Paris"}`)}}}},
				{Role: chat.RoleUser, Parts: []chat.Part{{Type: chat.PartToolResult, ToolResult: &chat.ToolResult{Content: []chat.Part{chat.Text("18 C, sunny")}}}}},
			},
			Format: &chat.Format{Type: chat.FormatJSONSchema, Schema: json.RawMessage(`{"type": "object"}`)}},
			1 + 5 + 2 + 1 + 2 + 3 + 2},
	} {
		if got := estimateTokens(&tt.r); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}

// A Gemini client names its output limit inside generationConfig, which
// the Transport's scan does not read: the chat model's reading counts.
func TestModelLimitsGeminiOutput(t *testing.T) {
	small, big := fake.NewServer("200"), fake.NewServer("200")
	t.Cleanup(small.Close)
	t.Cleanup(big.Close)
	sm := to("small", "gemini-small", nil, small.URL)
	sm.Models = []ModelLimits{{Model: "gemini-small", Output: 1024}}
	r := newXLRig(t, dialect.Gemini, "/v1beta/models/gemini-2.5-flash:generateContent", sm, to("big", "gemini-big", nil, big.URL))
	const body = `{"contents":[{"role":"user","parts":[{"text":"Write a long story."}]}],"generationConfig":{"maxOutputTokens":%d}}`
	resp, got := r.post(t, fmt.Sprintf(body, 2048))
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "big" || small.Provider.Calls() != 0 {
		t.Fatalf("status %d from %s, small's calls %d: %s; want big's answer, small skipped", resp.StatusCode,
			resp.Header.Get("Sluice-Provider"), small.Provider.Calls(), got)
	}
	if l := attemptLines(t, r.logs)[1]; l.Error != "skipped: sluice: the request asks for up to 2048 output tokens; model gemini-small is declared to write at most 1024" {
		t.Errorf("small's line: %s %q", l.Outcome, l.Error)
	}
	r.tr = &Transport{Policy: r.tr.Policy, Provider: "primary", Dialect: dialect.Gemini, Log: NewAttemptLog(&lockedBuffer{}), Fallbacks: r.tr.Fallbacks}
	if resp, got = r.post(t, fmt.Sprintf(body, 512)); resp.Header.Get("Sluice-Provider") != "small" || small.Provider.Calls() != 1 {
		t.Errorf("512 tokens: status %d from %s: %s; want small's answer", resp.StatusCode, resp.Header.Get("Sluice-Provider"), got)
	}
}

// The primary skipped by its declared limits and the one fallback
// refused by its open breaker: the primary is called after all, as when
// every fallback is skipped, and the client gets its own answer.
func TestModelLimitsSkippedThenBreakerRefused(t *testing.T) {
	big := fake.NewServer("200")
	t.Cleanup(big.Close)
	r := newXLRig(t, dialect.OpenAI, "/v1/chat/completions", to("big", "big-1", nil, big.URL))
	r.tr.Models = []ModelLimits{{Model: "gpt-4o", Lacks: []chat.Feature{chat.FeatureTools}}}
	r.tr.Policy.Breaker.Failures, r.tr.Policy.Breaker.Cool = 1, time.Hour
	p, err := r.tr.Breaker("big").Allow()
	if err != nil {
		t.Fatal(err)
	}
	p.Done(breaker.Failure, time.Millisecond)
	resp, got := r.post(t, limitTools)
	if resp.Header.Get("Sluice-Provider") != "primary" || r.primary.Provider.Calls() != 1 || big.Provider.Calls() != 0 {
		t.Fatalf("status %d from %q: %s; primary %d calls, big %d; want the primary's own answer from one call",
			resp.StatusCode, resp.Header.Get("Sluice-Provider"), got, r.primary.Provider.Calls(), big.Provider.Calls())
	}
	if o := outcomes(attemptLines(t, r.logs)); len(o) != 3 || o[0] != "primary:skipped" || o[1] != "big:circuit_open" {
		t.Errorf("lines %v, want the primary skipped, big refused, then the primary's attempt", o)
	}
}
