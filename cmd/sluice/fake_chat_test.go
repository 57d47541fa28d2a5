package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --chat answers every chat call with the file's answer, written in each
// API's shape: an OpenAI completion with a tool call comes back to an
// Anthropic client as a tool_use block. --strict refuses a request that
// breaks its API's rules with the provider's 400.
func TestFakeChatAndStrictFlags(t *testing.T) {
	file := filepath.Join(t.TempDir(), "answer.json")
	os.WriteFile(file, []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m",
		"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function",
		"function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],
		"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16}}`), 0o600)
	var errOut bytes.Buffer
	p, _, _, code, ok := parseFake([]string{"--listen", "127.0.0.1:0", "--strict", "--chat", file}, &errOut)
	if !ok {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	s := httptest.NewServer(p)
	defer s.Close()
	post := func(body string) (int, string) {
		resp, err := http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	status, body := post(`{"model":"claude-x","max_tokens":64,"messages":[{"role":"user","content":"weather?"}]}`)
	var got struct {
		Content []struct {
			Type, Name string
			Input      map[string]string
		}
		StopReason string `json:"stop_reason"`
	}
	json.Unmarshal([]byte(body), &got)
	if status != 200 || len(got.Content) != 1 || got.Content[0].Type != "tool_use" || got.Content[0].Name != "get_weather" ||
		got.Content[0].Input["city"] != "Paris" || got.StopReason != "tool_use" {
		t.Errorf("%d %s; want the file's tool call as Anthropic's tool_use", status, body)
	}
	if status, body := post(`{"model":"claude-x","messages":[{"role":"user","content":"weather?"}]}`); status != 400 || !strings.Contains(body, "max_tokens") {
		t.Errorf("a request without max_tokens: %d %s; want the 400 naming max_tokens", status, body)
	}
}

// A --chat file that is not an OpenAI completion is refused in one line
// that names the file and the fix; a missing one names the file too.
func TestFakeChatFileRefused(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"choices":"no"}`), 0o600)
	for _, f := range []string{bad, filepath.Join(t.TempDir(), "missing.json")} {
		var errOut bytes.Buffer
		p, _, _, code, ok := parseFake([]string{"--listen", "127.0.0.1:0", "--chat", f}, &errOut)
		if ok || p != nil || code != exitUsage || strings.Count(errOut.String(), "\n") != 1 ||
			!strings.HasPrefix(errOut.String(), "sluice fake: --chat: ") || !strings.Contains(errOut.String(), filepath.Base(f)) {
			t.Errorf("--chat %s: ok %v code %d: %q", f, ok, code, errOut.String())
		}
	}
}
