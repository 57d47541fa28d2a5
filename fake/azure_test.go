package fake

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func azurePost(t *testing.T, s *Server, path, body string, header ...string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func azureErr(t *testing.T, body string) azureError {
	t.Helper()
	var v struct{ Error azureError }
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("body %q: %v", body, err)
	}
	return v.Error
}

// TestAzureURLStyles: both of Azure's URL styles answer as OpenAI.
func TestAzureURLStyles(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	for _, path := range []string{
		"/openai/deployments/gpt4o-prod/chat/completions?api-version=2024-10-21",
		"/openai/v1/chat/completions?api-version=preview",
	} {
		resp, b := azurePost(t, s, path, `{"messages":[]}`, "api-key", "k")
		if resp.StatusCode != 200 || !strings.Contains(b, `"object":"chat.completion"`) {
			t.Errorf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
	resp, b := azurePost(t, s, "/openai/deployments/d/responses?api-version=2025-04-01-preview", `{"input":"hi"}`, "api-key", "k")
	if resp.StatusCode != 200 || !strings.Contains(b, `"object":"response"`) {
		t.Errorf("responses: %d %s", resp.StatusCode, b)
	}
	if n := s.Calls(); n != 3 {
		t.Errorf("%d calls, want 3", n)
	}
}

// TestAzureRateLimit429: a 429 step speaks Azure's rate-limit wording,
// with code "429", and sends both retry-after-ms and Retry-After: its
// hint's, else one second.
func TestAzureRateLimit429(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	const path = "/openai/deployments/d/chat/completions?api-version=2024-10-21"
	cases := []struct {
		script, ms, secs, says string
	}{
		{"429", "1000", "1", "Please retry after 1 seconds."},
		{"429:retry-after-ms=1500", "1500", "2", "Please retry after 2 seconds."},
		{"429:retry-after=3", "3000", "3", "Please retry after 3 seconds."},
	}
	for _, tc := range cases {
		resp, b := azurePost(t, s, path, `{}`, ScriptHeader, tc.script)
		e := azureErr(t, b)
		if resp.StatusCode != 429 || e.Code != "429" ||
			!strings.Contains(e.Message, "have exceeded token rate limit of your current OpenAI S0 pricing tier") ||
			!strings.Contains(e.Message, "ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21") ||
			!strings.Contains(e.Message, tc.says) {
			t.Errorf("%s: %d %s", tc.script, resp.StatusCode, b)
		}
		if got := resp.Header.Get("retry-after-ms"); got != tc.ms {
			t.Errorf("%s: retry-after-ms %q, want %s", tc.script, got, tc.ms)
		}
		if got := resp.Header.Get("Retry-After"); got != tc.secs {
			t.Errorf("%s: Retry-After %q, want %s", tc.script, got, tc.secs)
		}
	}
}

// TestAzureQuota429: 429:insufficient_quota is Azure's quota 429, which
// names no wait.
func TestAzureQuota429(t *testing.T) {
	s := NewServer("429:insufficient_quota")
	defer s.Close()
	resp, b := azurePost(t, s, "/openai/deployments/d/chat/completions?api-version=2024-10-21", `{}`)
	if e := azureErr(t, b); resp.StatusCode != 429 || !strings.Contains(e.Message, "call volume quota") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if resp.Header.Get("Retry-After") != "" || resp.Header.Get("retry-after-ms") != "" {
		t.Errorf("a quota 429 asks for a wait: %v", resp.Header)
	}
}

// TestAzureRefusedByLimits: a call the rate limits refuse gets Azure's
// wording, both hints, and OpenAI's x-ratelimit- headers.
func TestAzureRefusedByLimits(t *testing.T) {
	s := NewServer("200")
	s.RequestsPerMinute = 1
	defer s.Close()
	const path = "/openai/deployments/d/chat/completions?api-version=2024-10-21"
	if resp, _ := azurePost(t, s, path, `{}`); resp.StatusCode != 200 || resp.Header.Get("x-ratelimit-remaining-requests") != "0" ||
		resp.Header.Get("x-ratelimit-reset-requests") != "60" {
		t.Fatalf("first call: %d, remaining %q, reset %q; want 200, 0, 60 (seconds, as Azure writes it)", resp.StatusCode,
			resp.Header.Get("x-ratelimit-remaining-requests"), resp.Header.Get("x-ratelimit-reset-requests"))
	}
	resp, b := azurePost(t, s, path, `{}`)
	if e := azureErr(t, b); resp.StatusCode != 429 || e.Code != "429" || !strings.Contains(e.Message, "Please retry after 60 seconds") {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
	if resp.Header.Get("Retry-After") != "60" || resp.Header.Get("retry-after-ms") == "" {
		t.Errorf("hints: Retry-After %q, retry-after-ms %q", resp.Header.Get("Retry-After"), resp.Header.Get("retry-after-ms"))
	}
}

// TestOpenAIV1PathStaysOpenAI: /openai/v1/ without api-version or api-key
// is a plain OpenAI base URL: OpenAI's 429.
func TestOpenAIV1PathStaysOpenAI(t *testing.T) {
	s := NewServer("429")
	defer s.Close()
	resp, b := azurePost(t, s, "/openai/v1/chat/completions", `{}`)
	if resp.StatusCode != 429 || !strings.Contains(b, `"rate_limit_exceeded"`) || resp.Header.Get("retry-after-ms") != "" {
		t.Errorf("%d %s", resp.StatusCode, b)
	}
}

// TestKeepAliveStep: stream:keepalive=N sends N SSE comments before the
// first event.
func TestKeepAliveStep(t *testing.T) {
	steps, err := ParseScript("stream:keepalive=3;interval=1ms")
	if err != nil || steps[0].KeepAlives != 3 || steps[0].String() != "stream:interval=1ms;keepalive=3" {
		t.Fatalf("%+v %v", steps, err)
	}
	if _, err := ParseScript("stream:keepalive=0"); err == nil {
		t.Error("keepalive=0 accepted")
	}
	s := NewServer("stream:keepalive=3;interval=1ms")
	defer s.Close()
	_, b := azurePost(t, s, "/v1/chat/completions", `{"stream":true}`)
	if !strings.HasPrefix(b, strings.Repeat(keepAliveComment, 3)+"data: {") || !strings.HasSuffix(b, "data: [DONE]\n\n") {
		t.Errorf("stream %q", b)
	}
}
