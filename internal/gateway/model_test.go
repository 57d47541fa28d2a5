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
	for _, kind := range []string{config.KindOpenAI, config.KindAnthropic} {
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
