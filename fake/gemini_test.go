package fake

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const (
	geminiPath   = "/v1beta/models/gemini-test:generateContent"
	geminiStream = "/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
	geminiBody   = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
)

// geminiChunk is the part of a Gemini answer or chunk the tests read.
type geminiChunk struct {
	Candidates []struct {
		Content struct {
			Parts []struct{ Text string }
			Role  string
		}
		FinishReason string
	}
	UsageMetadata struct {
		PromptTokenCount, CandidatesTokenCount, TotalTokenCount int
	}
	ModelVersion string
}

// geminiError is Google's error body, as the tests read it.
type geminiError struct {
	Error struct {
		Code    int
		Message string
		Status  string
		Details []struct {
			Type       string `json:"@type"`
			RetryDelay string
			Violations []struct{ QuotaID, QuotaMetric string }
		}
	}
}

func decodeGeminiError(t *testing.T, b []byte) geminiError {
	t.Helper()
	var e geminiError
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not a Google error: %s (%v)", b, err)
	}
	return e
}

func TestGeminiAnswer(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	resp := post(t, s, geminiPath, "", geminiBody)
	var got geminiChunk
	if err := json.Unmarshal(readAll(t, resp), &got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if len(got.Candidates) != 1 || got.Candidates[0].Content.Parts[0].Text != "This is a fake answer." ||
		got.Candidates[0].FinishReason != "STOP" || got.Candidates[0].Content.Role != "model" {
		t.Errorf("candidates %+v", got.Candidates)
	}
	u := got.UsageMetadata
	if u.PromptTokenCount != len(geminiBody)/4 || u.CandidatesTokenCount != 5 || u.TotalTokenCount != u.PromptTokenCount+5 {
		t.Errorf("usage %+v", u)
	}
	if got.ModelVersion != "gemini-test" {
		t.Errorf("modelVersion %q, want the path's model", got.ModelVersion)
	}
	for path, want := range map[string]string{
		"/v1/models/gemini-test:countTokens":         `{"totalTokens":` + itoa(len(geminiBody)/4) + `}`,
		"/v1beta/models/text-embedding:embedContent": `{"embedding":{"values":[`,
	} {
		if b := string(readAll(t, post(t, s, path, "", geminiBody))); !strings.HasPrefix(b, want) {
			t.Errorf("%s: %s, want %s…", path, b, want)
		}
	}
	if resp := post(t, s, "/v1beta/models/gemini-test:explode", "", geminiBody); resp.StatusCode != 404 {
		t.Errorf("an unknown method: status %d, want 404", resp.StatusCode)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestGeminiStream(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	resp := post(t, s, geminiStream, "", geminiBody)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q: the stream path streams whatever the body says", ct)
	}
	raw := strings.TrimSpace(string(readAll(t, resp)))
	evs := strings.Split(raw, "\n\n")
	if len(evs) != 5 {
		t.Fatalf("%d events, want 5: %q", len(evs), raw)
	}
	text := ""
	for i, ev := range evs {
		var c geminiChunk
		if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &c); err != nil {
			t.Fatalf("event %d %q: %v", i, ev, err)
		}
		text += c.Candidates[0].Content.Parts[0].Text
		if want := map[bool]string{true: "STOP", false: ""}[i == 4]; c.Candidates[0].FinishReason != want {
			t.Errorf("event %d finishReason %q, want %q", i, c.Candidates[0].FinishReason, want)
		}
		if c.UsageMetadata.CandidatesTokenCount != i+1 {
			t.Errorf("event %d: candidatesTokenCount %d, want %d (cumulative)", i, c.UsageMetadata.CandidatesTokenCount, i+1)
		}
	}
	if text != "This is a fake answer." {
		t.Errorf("text %q", text)
	}
	// A cut stream never gets the finishReason chunk.
	resp = post(t, s, geminiStream, "stream:cut-after=2", geminiBody)
	if b, _ := io.ReadAll(resp.Body); strings.Contains(string(b), "finishReason") {
		t.Errorf("a cut stream ended: %q", b)
	}
	// An error event is Google's error in a data event.
	raw = string(readAll(t, post(t, s, geminiStream, "overloaded", geminiBody)))
	e := decodeGeminiError(t, []byte(strings.TrimSpace(strings.TrimPrefix(raw, "data: "))))
	if e.Error.Code != 503 || e.Error.Status != "UNAVAILABLE" {
		t.Errorf("error event %+v", e)
	}
}

func TestGeminiErrors(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	for _, tt := range []struct {
		script, status, quotaID, delay string
		code                           int
	}{
		{"503", "UNAVAILABLE", "", "", 503},
		{"500", "INTERNAL", "", "", 500},
		{"400", "INVALID_ARGUMENT", "", "", 400},
		{"429", "RESOURCE_EXHAUSTED", "GenerateRequestsPerMinutePerProjectPerModel", "", 429},
		{"429:retry-after=13", "RESOURCE_EXHAUSTED", "GenerateRequestsPerMinutePerProjectPerModel", "13s", 429},
		{"429:retry-after-ms=500", "RESOURCE_EXHAUSTED", "GenerateRequestsPerMinutePerProjectPerModel", "0.5s", 429},
		{"429:insufficient_quota", "RESOURCE_EXHAUSTED", "GenerateRequestsPerDayPerProjectPerModel-FreeTier", "", 429},
	} {
		resp := post(t, s, geminiPath, tt.script, geminiBody)
		e := decodeGeminiError(t, readAll(t, resp))
		if resp.StatusCode != tt.code || e.Error.Code != tt.code || e.Error.Status != tt.status {
			t.Errorf("%s: %d %+v", tt.script, resp.StatusCode, e.Error)
		}
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			t.Errorf("%s: Retry-After %q; Google gives the wait in the body", tt.script, ra)
		}
		var quotaID, delay string
		for _, d := range e.Error.Details {
			switch d.Type {
			case "type.googleapis.com/google.rpc.QuotaFailure":
				quotaID = d.Violations[0].QuotaID
			case "type.googleapis.com/google.rpc.RetryInfo":
				delay = d.RetryDelay
			}
		}
		if quotaID != tt.quotaID || delay != tt.delay {
			t.Errorf("%s: quotaId %q, retryDelay %q; want %q, %q", tt.script, quotaID, delay, tt.quotaID, tt.delay)
		}
	}
}

func TestGeminiRateLimit(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &Provider{RequestsPerMinute: 1, Now: func() time.Time { return now }}
	s := &Server{Server: httptest.NewServer(p), Provider: p}
	defer s.Close()
	if resp := post(t, s, geminiPath, "", geminiBody); resp.StatusCode != 200 {
		t.Fatalf("first call: %d", resp.StatusCode)
	}
	now = now.Add(20 * time.Second)
	resp := post(t, s, geminiPath, "", geminiBody)
	e := decodeGeminiError(t, readAll(t, resp))
	if resp.StatusCode != http.StatusTooManyRequests || e.Error.Status != "RESOURCE_EXHAUSTED" {
		t.Fatalf("%d %+v", resp.StatusCode, e)
	}
	var delay string
	for _, d := range e.Error.Details {
		if d.Type == "type.googleapis.com/google.rpc.RetryInfo" {
			delay = d.RetryDelay
		}
	}
	if delay != "40s" {
		t.Errorf("retryDelay %q, want 40s (the first call leaves the window 60 s after it)", delay)
	}
	if p.RateLimited() != 1 {
		t.Errorf("rate limited %d, want 1", p.RateLimited())
	}
}
