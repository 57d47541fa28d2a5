package gateway

import (
	"net/http"
	"testing"
)

// TestRequestIDs: the provider's X-Request-Id reaches the client as it
// came (SDKs show it, and the provider's support knows it); Sluice's own
// id is Sluice-Request-Id on every answer, and X-Request-Id too on the
// gateway's own answers; a client's X-Client-Request-Id becomes the id.
func TestRequestIDs(t *testing.T) {
	e := newEnv(t, "200", nil)

	resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "X-Client-Request-Id", "client-77")
	body(t, resp)
	if got := resp.Header.Get("Sluice-Request-Id"); got != "client-77" {
		t.Errorf("Sluice-Request-Id %q, want the client's X-Client-Request-Id", got)
	}
	up := e.up.Requests()[0].Header
	if up.Get("X-Request-Id") != "client-77" || up.Get("X-Client-Request-Id") != "client-77" {
		t.Errorf("upstream saw %q / %q", up.Get("X-Request-Id"), up.Get("X-Client-Request-Id"))
	}
	if got := resp.Header.Get("X-Request-Id"); got == "" || got == "client-77" {
		t.Errorf("X-Request-Id %q, want the provider's", got)
	}

	// The gateway's own answers: an upstream that cannot be reached, and
	// a path no route serves.
	for _, tc := range []struct {
		script, path string
		status       int
	}{
		{"reset", "/openai/v1/chat/completions", http.StatusBadGateway},
		{"200", "/nowhere/v1/chat/completions", http.StatusNotFound},
	} {
		e := newEnv(t, tc.script, nil)
		resp := e.do("POST", tc.path, chatBody)
		body(t, resp)
		id := resp.Header.Get("Sluice-Request-Id")
		if resp.StatusCode != tc.status || id == "" || resp.Header.Get("X-Request-Id") != id {
			t.Errorf("%s: %d, Sluice-Request-Id %q, X-Request-Id %q; want %d with both ids equal",
				tc.path, resp.StatusCode, id, resp.Header.Get("X-Request-Id"), tc.status)
		}
	}
}
