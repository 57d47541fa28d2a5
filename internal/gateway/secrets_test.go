package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/scrub"
)

func TestEveryProvidersKeyIsASecret(t *testing.T) {
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	cfg.Providers = map[string]config.Provider{
		"openai": {Kind: "openai", BaseURL: "http://127.0.0.1:1", APIKeyEnv: "A"},
		"backup": {Kind: "openai", BaseURL: "http://127.0.0.1:2", APIKeyEnv: "B"},
		"claude": {Kind: "anthropic", BaseURL: "http://127.0.0.1:3"},
	}
	cfg.Routes = []config.Route{{Prefix: "/openai", Provider: "openai", Policy: "interactive",
		Fallbacks: []config.Target{{Provider: "backup", Model: "m"}}}}
	gw, err := New(cfg, Options{Getenv: func(k string) string { return map[string]string{"A": "sk-a-111111", "B": "sk-b-222222"}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer gw.Close()
	h := http.Header{"A": {"sk-a-111111"}, "B": {"sk-b-222222"}}
	gw.secrets.Header(h)
	if h.Get("A") != scrub.Redacted || h.Get("B") != scrub.Redacted {
		t.Errorf("scrubbed %v, want both injected keys redacted", h)
	}
}

// echoUpstream answers every request with status, echoing the request's
// headers in a JSON error body and its Authorization in a header; a
// stream echoes them in an event, the key split across two writes.
func echoUpstream(t *testing.T, status int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("X-Echo-Authorization", r.Header.Get("Authorization"))
		w.Header().Set("X-Echo-Api-Key", r.Header.Get("X-Api-Key"))
		if strings.Contains(r.URL.Path, "stream") {
			w.Header().Set("Content-Type", "text/event-stream")
			auth := r.Header.Get("Authorization")
			half := len(auth) - 6
			w.Write([]byte("data: {\"echo\":\"" + auth[:half]))
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
			w.Write([]byte(auth[half:] + "\"}\n\ndata: [DONE]\n\n"))
			return
		}
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": "bad request", "type": "invalid_request_error", "headers": r.Header}})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		w.WriteHeader(status)
		w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// An upstream that echoes the request's headers never hands the injected
// key to the client: headers and bodies (400, 500, a stream) carry
// [redacted] instead, and Content-Length stays truthful.
func TestInjectedKeyScrubbedFromAnswers(t *testing.T) {
	for _, tc := range []struct {
		status int
		path   string
	}{{400, "/openai/v1/chat/completions"}, {500, "/openai/v1/chat/completions"}, {400, "/anthropic/v1/messages"}, {200, "/openai/v1/stream"}} {
		up := echoUpstream(t, tc.status)
		e := newEnv(t, "200", func(c *config.Config) {
			for name, p := range c.Providers {
				p.APIKeyEnv = "UPSTREAM_KEY"
				p.BaseURL = up.URL
				c.Providers[name] = p
			}
		})
		resp := e.do("POST", tc.path, chatBody)
		got := body(t, resp)
		if resp.StatusCode != tc.status {
			t.Errorf("%s: status %d, want %d", tc.path, resp.StatusCode, tc.status)
		}
		for k, vs := range resp.Header {
			for _, v := range vs {
				if strings.Contains(v, "sk-injected-1234") {
					t.Errorf("%s %d: the key reached the client in header %s", tc.path, tc.status, k)
				}
			}
		}
		if strings.Contains(got, "sk-injected-1234") || strings.Contains(got, "injected") {
			t.Errorf("%s %d: the key reached the client in the body: %s", tc.path, tc.status, got)
		}
		if !strings.Contains(got, scrub.Redacted) {
			t.Errorf("%s %d: the body lacks %s: %s", tc.path, tc.status, scrub.Redacted, got)
		}
		echoed := resp.Header.Get("X-Echo-Authorization") + resp.Header.Get("X-Echo-Api-Key")
		if !strings.Contains(echoed, scrub.Redacted) {
			t.Errorf("%s %d: the echoed header is %q, want %s", tc.path, tc.status, echoed, scrub.Redacted)
		}
		if cl := resp.Header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(got)) {
			t.Errorf("%s %d: Content-Length %s for a body of %d bytes", tc.path, tc.status, cl, len(got))
		}
		if tc.status == 200 && !strings.HasSuffix(got, "\"}\n\ndata: [DONE]\n\n") {
			t.Errorf("stream framing broken: %q", got)
		}
	}
}
