package fake

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
)

// limitKind checks a rate-limit 429's body in the dialect's shape and
// returns the limit it names: "requests" or "tokens".
func limitKind(t *testing.T, d limitDialect, r *http.Response) string {
	t.Helper()
	b, _ := io.ReadAll(r.Body)
	if d.name == "anthropic" {
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		decode(t, b, &e)
		if e.Type != "error" || e.Error.Type != "rate_limit_error" {
			t.Fatalf("Anthropic 429 body %s, want a rate_limit_error", b)
		}
		for _, kind := range []string{"requests", "tokens"} {
			if strings.Contains(e.Error.Message, " "+kind+" per minute") {
				return kind
			}
		}
		t.Fatalf("Anthropic 429 message %q names no limit", e.Error.Message)
	}
	var e struct {
		Error map[string]any
	}
	decode(t, b, &e)
	msg, _ := e.Error["message"].(string)
	param, hasParam := e.Error["param"]
	if e.Error["code"] != "rate_limit_exceeded" || !hasParam || param != nil || len(e.Error) != 4 {
		t.Fatalf("OpenAI 429 body %s, want message, type, param null and code rate_limit_exceeded", b)
	}
	typ, _ := e.Error["type"].(string)
	if !strings.HasPrefix(msg, "Rate limit reached for "+typ) && !strings.HasPrefix(msg, "Request too large for "+typ) {
		t.Fatalf("OpenAI 429 message %q does not name its type %q", msg, typ)
	}
	return typ
}

// sized returns a request body of exactly size bytes (size/4 prompt
// tokens) with "field": n when field is not empty.
func sized(t *testing.T, field string, n, size int) string {
	t.Helper()
	head := `{"model":"m",`
	if field != "" {
		head += fmt.Sprintf(`"%s":%d,`, field, n)
	}
	head += `"messages":[{"role":"user","content":"`
	tail := `"}]}`
	pad := size - len(head) - len(tail)
	if pad < 0 {
		t.Fatalf("a body of %d bytes is too short for %s", size, head)
	}
	return head + strings.Repeat("x", pad) + tail
}

// TestTokensPerMinute: a call's tokens are its body bytes / 4 plus its
// first positive output limit, else its step's completion tokens; with
// TokensPerMinute 10,000 exactly the calls that fit are answered, each
// answer saying the tokens left, and the next is refused for tokens.
func TestTokensPerMinute(t *testing.T) {
	tests := []struct {
		name, path, script, body string
		perCall, admitted        int
	}{
		{"max_tokens", chatPath, "", sized(t, "max_tokens", 900, 400), 1000, 10},
		{"max_completion_tokens", chatPath, "", sized(t, "max_completion_tokens", 1900, 400), 2000, 5},
		{"max_output_tokens", respPath, "", sized(t, "max_output_tokens", 2400, 400), 2500, 4},
		{"anthropic max_tokens", messagesPath, "", sized(t, "max_tokens", 400, 400), 500, 20},
		{"first positive", chatPath, "", `{"max_tokens":0,"max_completion_tokens":300,"max_output_tokens":7,"x":"` +
			strings.Repeat("y", 327) + `"}`, 400, 25},
		{"none: the answer's 5", chatPath, "", sized(t, "", 0, 400), 105, 95},
		{"none: the step's events", chatPath, "stream:events=45", sized(t, "", 0, 400), 145, 68},
		{"none: an error step's default", chatPath, "503", sized(t, "", 0, 400), 105, 95},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := limitDialects[0]
			if tt.path == messagesPath {
				d = limitDialects[2]
			}
			p := &Provider{TokensPerMinute: 10000, Now: newClock().Now}
			for i := 1; i <= tt.admitted; i++ {
				r := serve(p, tt.path, tt.script, tt.body)
				want := strconv.Itoa(10000 - i*tt.perCall)
				if r.StatusCode == 429 || r.Header.Get(d.tokRemaining) != want {
					t.Fatalf("call %d: %d, %s %q; want it answered with %s left", i, r.StatusCode, d.tokRemaining,
						r.Header.Get(d.tokRemaining), want)
				}
			}
			r := serve(p, tt.path, tt.script, tt.body)
			if r.StatusCode != 429 || r.Header.Get("Retry-After") != "60" || r.Header.Get(d.reqLimit) != "" ||
				r.Header.Get(d.tokLimit) != "10000" || r.Header.Get(d.tokRemaining) != strconv.Itoa(10000-tt.admitted*tt.perCall) {
				t.Fatalf("call %d: %d, Retry-After %q, headers %v; want a 429 after 60 s, tokens only", tt.admitted+1,
					r.StatusCode, r.Header.Get("Retry-After"), r.Header)
			}
			if kind := limitKind(t, d, r); kind != "tokens" {
				t.Errorf("429 for %q, want tokens", kind)
			}
		})
	}
}

// TestTooLargeForTheTokenLimit: a call whose tokens alone exceed the
// limit is refused with Retry-After 60 and a message that says so, and
// takes nothing from the window.
func TestTooLargeForTheTokenLimit(t *testing.T) {
	for _, d := range limitDialects {
		t.Run(d.name, func(t *testing.T) {
			p := &Provider{TokensPerMinute: 1000, Now: newClock().Now}
			r := serve(p, d.path, "", sized(t, "max_tokens", 1000, 400)) // 1100 tokens
			b, _ := io.ReadAll(r.Body)
			if r.StatusCode != 429 || r.Header.Get("Retry-After") != "60" || r.Header.Get(d.tokRemaining) != "1000" ||
				(!strings.Contains(string(b), "Request too large") && !strings.Contains(string(b), "it needs 1100 tokens")) {
				t.Fatalf("%d, Retry-After %q, remaining %q, %s; want a 429 that says the call is too large",
					r.StatusCode, r.Header.Get("Retry-After"), r.Header.Get(d.tokRemaining), b)
			}
			r = serve(p, d.path, "", sized(t, "max_tokens", 900, 400))
			if r.StatusCode != 200 || r.Header.Get(d.tokRemaining) != "0" {
				t.Errorf("then a call of 1000: %d, remaining %q; want it answered with 0 left", r.StatusCode, r.Header.Get(d.tokRemaining))
			}
		})
	}
}

// TestRateLimitedCallPlaysNoStep: a refused call does not take its
// script's step; the next admitted call plays it. Calls counts it, Played
// does not, RateLimited and GET /fake/calls do, and Requests marks it.
func TestRateLimitedCallPlaysNoStep(t *testing.T) {
	clk := newClock()
	p := &Provider{Script: "503,201", RequestsPerMinute: 1, Now: clk.Now}
	var got []int
	for _, at := range []time.Duration{0, 30 * time.Second, 60 * time.Second} {
		clk.set(at)
		r := serve(p, chatPath, "", chatBody)
		got = append(got, r.StatusCode)
		if r.Header.Get("x-ratelimit-remaining-requests") != "0" {
			t.Errorf("at %v: remaining %q, want 0", at, r.Header.Get("x-ratelimit-remaining-requests"))
		}
		if r.StatusCode == 429 && (r.Header.Get("Retry-After") != "30" || r.Header.Get("x-ratelimit-reset-requests") != "30s") {
			t.Errorf("at %v: Retry-After %q, reset %q; want 30 and 30s", at, r.Header.Get("Retry-After"),
				r.Header.Get("x-ratelimit-reset-requests"))
		}
	}
	if want := []int{503, 429, 201}; !reflect.DeepEqual(got, want) {
		t.Errorf("statuses %v, want %v", got, want)
	}
	reqs := p.Requests()
	if !reqs[1].RateLimited || reqs[1].Step != "" || reqs[0].RateLimited || reqs[2].Step != "201" {
		t.Errorf("requests %+v", reqs)
	}
	var calls map[string]any
	decode(t, getBody(t, p, "/fake/calls"), &calls)
	want := map[string]any{"calls": 3.0, "played": map[string]any{"503": 1.0, "201": 1.0}, "rate_limited": 1.0}
	if !reflect.DeepEqual(calls, want) {
		t.Errorf("GET /fake/calls = %v, want %v", calls, want)
	}
}

// getBody sends GET path to p and returns the body of its 200.
func getBody(t *testing.T, p *Provider, path string) []byte {
	t.Helper()
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != 200 {
		t.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
	}
	return rec.Body.Bytes()
}

// TestResetClearsTheWindow: after Reset (POST /fake/reset) the limit is
// whole again and RateLimited is 0.
func TestResetClearsTheWindow(t *testing.T) {
	p := &Provider{RequestsPerMinute: 2, TokensPerMinute: 1000, Now: newClock().Now}
	var got []int
	for range 3 {
		got = append(got, serve(p, chatPath, "", chatBody).StatusCode)
	}
	if want := []int{200, 200, 429}; !reflect.DeepEqual(got, want) || p.RateLimited() != 1 {
		t.Fatalf("statuses %v, rate limited %d; want %v and 1", got, p.RateLimited(), want)
	}
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/fake/reset", nil))
	r := serve(p, chatPath, "", chatBody)
	tokens := strconv.Itoa(1000 - len(chatBody)/4 - 5)
	if rec.Code != 204 || r.StatusCode != 200 || r.Header.Get("x-ratelimit-remaining-requests") != "1" ||
		r.Header.Get("x-ratelimit-remaining-tokens") != tokens || p.RateLimited() != 0 || p.Calls() != 1 {
		t.Errorf("after reset (%d): %d, remaining %q requests %q tokens, rate limited %d, calls %d; want 200, 1, %s, 0, 1",
			rec.Code, r.StatusCode, r.Header.Get("x-ratelimit-remaining-requests"), r.Header.Get("x-ratelimit-remaining-tokens"),
			p.RateLimited(), p.Calls(), tokens)
	}
}

// TestLimitHeadersOnEveryAnswer: while a limit is set, every answer
// carries the rate-limit headers, error steps and streams too, with the
// reset the newest call's exit from the window; without limits, none.
func TestLimitHeadersOnEveryAnswer(t *testing.T) {
	for _, d := range limitDialects {
		t.Run(d.name, func(t *testing.T) {
			clk := newClock()
			p := &Provider{RequestsPerMinute: 10, TokensPerMinute: 5000, Now: clk.Now}
			body := sized(t, "max_tokens", 100, 400) // 200 tokens
			stream := strings.Replace(body, `{"model":"m",`, `{"model":"m","stream":true,`, 1)
			stream = strings.Replace(stream, strings.Repeat("x", 14), "", 1) // 400 bytes still
			if len(stream) != len(body) {
				t.Fatalf("the stream body has %d bytes, want %d", len(stream), len(body))
			}
			for i, c := range []struct {
				at           time.Duration
				script, body string
				status       int
			}{
				{0, "200", body, 200},
				{10 * time.Second, "503", body, 503},
				{20 * time.Second, "429:retry-after=7", body, 429},
				{30 * time.Second, "200", stream, 200},
				{45 * time.Second, "5o3", body, 400},
			} {
				clk.set(c.at)
				r := serve(p, d.path, c.script, c.body)
				io.Copy(io.Discard, r.Body)
				h := r.Header
				n := i + 1
				if r.StatusCode != c.status || h.Get(d.reqLimit) != "10" || h.Get(d.reqRemaining) != strconv.Itoa(10-n) ||
					h.Get(d.tokLimit) != "5000" || h.Get(d.tokRemaining) != strconv.Itoa(5000-200*n) ||
					h.Get(d.reqReset) != d.resetIn(c.at, c.at+time.Minute) || h.Get(d.tokReset) != d.resetIn(c.at, c.at+time.Minute) {
					t.Errorf("%s at %v: %d, headers %v; want %d with %d requests and %d tokens left, reset at t0+%v",
						c.script, c.at, r.StatusCode, h, c.status, 10-n, 5000-200*n, c.at+time.Minute)
				}
				if want := map[bool]string{true: "7", false: ""}[c.status == 429]; h.Get("Retry-After") != want {
					t.Errorf("%s: Retry-After %q, want %q (the step's own only)", c.script, h.Get("Retry-After"), want)
				}
			}
			off := serve(&Provider{}, d.path, "", body)
			for name := range off.Header {
				if strings.Contains(strings.ToLower(name), "ratelimit") {
					t.Errorf("without limits: header %s", name)
				}
			}
		})
	}
}

// TestOpenAIResetFormat: OpenAI's reset headers are durations in its
// format, rounded up to the millisecond.
func TestOpenAIResetFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", time.Second: "1s", 6 * time.Minute: "6m0s", 250 * time.Millisecond: "250ms",
		1500*time.Millisecond + 1: "1.501s", 59*time.Second + 999999*time.Microsecond: "1m0s", -time.Second: "0s",
	} {
		if got := openAIDuration(d); got != want {
			t.Errorf("openAIDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestRateLimitOverSocketWithSDKs: over a real socket the official SDKs
// read the 429 as a rate-limit error (OpenAI: code rate_limit_exceeded,
// type requests; Anthropic: rate_limit_error), and GET /fake/calls counts
// the refusals.
func TestRateLimitOverSocketWithSDKs(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	s.RequestsPerMinute = 1 // before the first call
	oc := goSDKClient(t, s)
	if _, err := oc.Responses.New(t.Context(), responseParams()); err != nil {
		t.Fatalf("first call: %v", err)
	}
	_, err := oc.Chat.Completions.New(t.Context(), openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != 429 || oerr.Code != "rate_limit_exceeded" || oerr.Type != "requests" ||
		oerr.Response.Header.Get("Retry-After") != "60" {
		t.Errorf("OpenAI SDK: %v, want a 429 rate_limit_exceeded for requests with Retry-After 60", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	ac := asdk.NewClient(aoption.WithBaseURL(s.URL), aoption.WithAPIKey("sk-fake"),
		aoption.WithHTTPClient(&http.Client{Transport: tr}), aoption.WithMaxRetries(0))
	_, err = ac.Messages.New(t.Context(), asdk.MessageNewParams{
		Model:     "claude-haiku-4-5",
		MaxTokens: 64,
		Messages:  []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock("hi"))},
	})
	var aerr *asdk.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != 429 || aerr.Type() != asdk.ErrorTypeRateLimitError ||
		aerr.Response.Header.Get("anthropic-ratelimit-requests-remaining") != "0" {
		t.Errorf("Anthropic SDK: %v, want a 429 rate_limit_error with 0 requests left", err)
	}
	resp, err := s.Client().Get(s.URL + "/fake/calls")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var calls struct {
		Calls       int
		Played      map[string]int
		RateLimited int `json:"rate_limited"`
	}
	decode(t, readAll(t, resp), &calls)
	if calls.Calls != 3 || calls.RateLimited != 2 || !reflect.DeepEqual(calls.Played, map[string]int{"200": 1}) {
		t.Errorf("GET /fake/calls = %+v, want 3 calls, 2 rate limited, 1 × 200", calls)
	}
}

// TestAnthropicResetRoundsUp: Anthropic's reset is an RFC 3339 time in
// UTC, rounded up to the second, never before the window is empty.
func TestAnthropicResetRoundsUp(t *testing.T) {
	clk := newClock()
	clk.set(500 * time.Millisecond)
	p := &Provider{RequestsPerMinute: 5, Now: clk.Now}
	r := serve(p, messagesPath, "", messagesBody)
	if got, want := r.Header.Get("anthropic-ratelimit-requests-reset"), "2026-11-30T12:01:01Z"; got != want {
		t.Errorf("reset %q after a call at 12:00:00.5, want %q", got, want)
	}
}
