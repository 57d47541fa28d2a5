package fake

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// KeyScripts picks the script by the call's API key, in either header; the
// script header still wins, and other keys follow Script.
func TestKeyScripts(t *testing.T) {
	p := &Provider{Script: "200", KeyScripts: map[string]string{"sk-a": "429:retry-after=7", "sk-b": "503"}}
	srv := httptest.NewServer(p)
	defer srv.Close()
	call := func(path, body, header, value, script string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(body))
		req.Header.Set(header, value)
		if script != "" {
			req.Header.Set(ScriptHeader, script)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := call(chatPath, chatBody, "Authorization", "Bearer sk-a", ""); r.StatusCode != 429 || r.Header.Get("Retry-After") != "7" {
		t.Errorf("key a: %d Retry-After %q, want 429 and 7", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := call(messagesPath, messagesBody, "X-Api-Key", "sk-b", ""); r.StatusCode != 503 {
		t.Errorf("key b by x-api-key: %d, want 503", r.StatusCode)
	}
	if r := call(chatPath, chatBody, "Authorization", "Bearer sk-c", ""); r.StatusCode != 200 {
		t.Errorf("another key: %d, want 200", r.StatusCode)
	}
	if r := call(chatPath, chatBody, "Authorization", "Bearer sk-a", "200"); r.StatusCode != 200 {
		t.Errorf("key a with a script header: %d, want the header's 200", r.StatusCode)
	}
	if p.Calls() != 4 {
		t.Errorf("calls %d, want 4", p.Calls())
	}
}
