package gateway

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/config"
)

// A model name from a client is checked before any upstream call: at most
// 256 bytes of printable UTF-8, a JSON string, else 400 invalid_request.
func TestModelNamesChecked(t *testing.T) {
	chat := func(model string) string { return `{"model":` + model + `,"messages":[]}` }
	tests := []struct {
		name, body string
		ok         bool
	}{
		{"plain", chat(`"gpt-4o-mini"`), true},
		{"exactly 256 bytes", chat(`"` + strings.Repeat("m", 256) + `"`), true},
		{"257 bytes", chat(`"` + strings.Repeat("m", 257) + `"`), false},
		{"100 kB of invalid UTF-8", chat(`"` + strings.Repeat("\xff", 100_000) + `"`), false},
		{"invalid UTF-8", chat("\"gpt-\xc3\x28\""), false},
		{"a control character", chat(`"gpt\u0001"`), false},
		{"an escaped line break", chat(`"gpt\r\nX-Injected: 1"`), false},
		{"a number", chat(`5`), false},
		{"an object", chat(`{"name":"gpt-4o"}`), false},
		{"no model", `{"messages":[]}`, true},
	}
	for _, kind := range []string{"openai", "anthropic"} {
		for _, tt := range tests {
			e := newEnv(t, "200", nil)
			resp := e.do("POST", "/"+kind+"/v1/chat/completions", tt.body)
			if tt.ok {
				body(t, resp)
				if resp.StatusCode != 200 || e.up.Calls() != 1 {
					t.Errorf("%s %s: %d with %d upstream calls, want 200 with 1", kind, tt.name, resp.StatusCode, e.up.Calls())
				}
				continue
			}
			if len(resp.Header.Values("Sluice-Model")) != 0 {
				t.Errorf("%s %s: answer carries Sluice-Model", kind, tt.name)
			}
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s %s: status %d, want 400", kind, tt.name, resp.StatusCode)
			}
			if typ := gatewayError(t, resp, kind); typ != "invalid_request" {
				t.Errorf("%s %s: type %q, want invalid_request", kind, tt.name, typ)
			}
			if e.up.Calls() != 0 {
				t.Errorf("%s %s: %d upstream calls, want 0", kind, tt.name, e.up.Calls())
			}
			if strings.Contains(e.logs.String(), `"model"`) {
				t.Errorf("%s %s: an attempt was logged", kind, tt.name)
			}
		}
	}
	e := newEnv(t, "200", nil)
	raw := body(t, e.do("POST", "/openai/v1/chat/completions", chat(`"`+strings.Repeat("m", 257)+`"`)))
	if !strings.Contains(raw, "256") || !strings.Contains(raw, "257 bytes") {
		t.Errorf("the error %s does not name the limit and the size", raw)
	}
}

// A model named in the path (Gemini's /models/{model}:generateContent and
// its siblings, Azure's /openai/deployments/{deployment}/…) is checked as
// a body's model is: a 10 kB or a CR-LF (percent-encoded) name gets 400
// invalid_request in the dialect's shape, with no upstream call and no
// attempt logged.
func TestPathModelNamesChecked(t *testing.T) {
	long := strings.Repeat("m", 10_000)
	tests := []struct {
		name, path, kind string
	}{
		{"gemini 10 kB", "/gemini/v1beta/models/" + long + ":generateContent", "gemini"},
		{"gemini CR-LF", "/gemini/v1beta/models/gemini%0D%0AX-Injected%201:generateContent", "gemini"},
		{"gemini CR-LF and a colon", "/gemini/v1beta/models/gemini%0D%0AX-Injected:%201:generateContent", "gemini"},
		{"gemini stream CR-LF", "/gemini/v1beta/models/g%0D%0Ax:streamGenerateContent?alt=sse", "gemini"},
		{"gemini countTokens 10 kB", "/gemini/v1beta/models/" + long + ":countTokens", "gemini"},
		{"azure 10 kB", "/azure/openai/deployments/" + long + "/chat/completions?api-version=2024-10-21", "azure"},
		{"azure CR-LF", "/azure/openai/deployments/gpt%0D%0AX-Injected:%201/chat/completions?api-version=2024-10-21", "azure"},
	}
	for _, tt := range tests {
		e := newEnv(t, "200", func(c *config.Config) { withGemini(c); withAzure(nil)(c) })
		resp := e.do("POST", tt.path, geminiBody)
		raw := body(t, resp)
		if resp.StatusCode != http.StatusBadRequest || e.up.Calls() != 0 {
			t.Errorf("%s: %d with %d upstream calls, want 400 with 0", tt.name, resp.StatusCode, e.up.Calls())
			continue
		}
		if tt.kind == "gemini" {
			if _, reason := geminiGatewayError(t, raw, http.StatusBadRequest); reason != "invalid_request" {
				t.Errorf("%s: reason %q, want invalid_request", tt.name, reason)
			}
		} else if !strings.Contains(raw, `"code":"invalid_request"`) {
			t.Errorf("%s: %s, want an invalid_request error", tt.name, raw)
		}
		if strings.Contains(raw, "X-Injected") || len(raw) > 2000 {
			t.Errorf("%s: the answer echoes the name: %.300s", tt.name, raw)
		}
		if e.logs.String() != "" {
			t.Errorf("%s: an attempt was logged: %.300s", tt.name, e.logs.String())
		}
	}
	// A good name still passes.
	e := newEnv(t, "200", withGemini)
	resp := e.do("POST", geminiGenerate, geminiBody)
	if body(t, resp); resp.StatusCode != 200 || e.up.Calls() != 1 {
		t.Errorf("a valid path model: %d with %d upstream calls, want 200 with 1", resp.StatusCode, e.up.Calls())
	}
}
