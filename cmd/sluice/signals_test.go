package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
)

// hangUp sends SIGHUP and waits for the reload's one line (n-th reload).
func (p *proc) hangUp(t *testing.T, n int) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGHUP)
	deadline := time.Now().Add(20 * time.Second)
	for strings.Count(p.stderr.String(), "config reload") < n {
		if time.Now().After(deadline) {
			t.Fatalf("no reload line after SIGHUP; stderr:\n%s", p.stderr)
		}
		select {
		case err := <-p.done:
			p.done <- err
			t.Fatalf("sluice exited on SIGHUP (%v); stderr:\n%s", err, p.stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (p *proc) post(t *testing.T, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+p.addr+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// metric returns the value of the metric line that starts with name.
func (p *proc) metric(t *testing.T, name string) string {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for l := range strings.Lines(string(page)) {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// editConfig rewrites the config file at path with edit.
func editConfig(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(edit(string(b))), 0o600); err != nil {
		t.Fatal(err)
	}
}

func addRoute(cfg string) string {
	return strings.Replace(cfg, "routes:\n", "routes:\n  - {prefix: /v2, provider: openai, policy: interactive}\n", 1)
}

func TestServeHUPReloadsWhileStreamsFinish(t *testing.T) {
	up := fake.NewServer("stream:events=20;interval=50ms")
	defer up.Close()
	want := directStream(t, up.URL)

	cfg := writeConfig(t, up.URL, "")
	p := startSluice(t, nil, "serve", "--config", cfg)
	resp, r, first := openStream(t, p)
	editConfig(t, cfg, addRoute)
	p.hangUp(t, 1)
	rest, err := io.ReadAll(r)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("stream cut by SIGHUP: %v", err)
	}
	if got := first + string(rest); normalise(got) != normalise(want) {
		t.Errorf("stream across SIGHUP differs from the direct one:\n%s\nvs\n%s", got, want)
	}
	if !strings.Contains(p.stderr.String(), `msg="config reloaded" routes="/v2 → `+up.URL+`, /openai → `+up.URL+`"`) {
		t.Errorf("stderr:\n%s\nwant one line saying the config was reloaded, with its routes", p.stderr)
	}
	if code, got := p.post(t, "/v2/v1/chat/completions", streamReq); code != 200 || !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Errorf("the route added by the reload answered %d:\n%s", code, got)
	}
	if got := p.metric(t, `sluice_config_reloads_total{result="ok"}`); got != "1" {
		t.Errorf("reloads ok = %q, want 1", got)
	}
}

func TestServeHUPRefusesABadConfig(t *testing.T) {
	up := fake.NewServer("200")
	defer up.Close()
	cfg := writeConfig(t, up.URL, "")
	orig, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := startSluice(t, nil, "serve", "--config", cfg)
	for i, tt := range []struct {
		edit func(string) string
		want string
	}{
		{func(c string) string { return c + "bogus: 1\n" }, "bogus"},
		{func(c string) string { return strings.Replace(c, "listen: 127.0.0.1:0", "listen: 127.0.0.1:1", 1) }, "listen changed from"},
		{func(c string) string {
			return addRoute(strings.Replace(c, "kind: openai,", "kind: openai, api_key_env: SLUICE_TEST_UNSET_KEY,", 1))
		}, "SLUICE_TEST_UNSET_KEY"},
	} {
		editConfig(t, cfg, func(string) string { return tt.edit(string(orig)) })
		before := len(p.stderr.String())
		p.hangUp(t, i+1)
		said := p.stderr.String()[before:]
		if strings.Count(said, "\n") != 1 || !strings.Contains(said, "config reload refused") || !strings.Contains(said, tt.want) {
			t.Errorf("stderr after SIGHUP:\n%s\nwant one line refusing the reload, naming %q", said, tt.want)
		}
		if code, _ := p.post(t, "/openai/v1/chat/completions", `{"model":"m"}`); code != 200 {
			t.Errorf("the previous config answered %d, want 200", code)
		}
		if code, _ := p.post(t, "/v2/v1/chat/completions", `{"model":"m"}`); code != 404 {
			t.Errorf("a route of the refused config answered %d, want 404", code)
		}
	}
	if got := p.metric(t, `sluice_config_reloads_total{result="error"}`); got != "3" {
		t.Errorf("reloads error = %q, want 3", got)
	}
}

func TestServeHUPKeepsBreakersOpen(t *testing.T) {
	up := fake.NewServer("500")
	defer up.Close()
	cfg := writeConfig(t, up.URL, "    retry: {max_attempts: 1}\n    breaker: {failures: 2, cool: 1h}\n")
	p := startSluice(t, nil, "serve", "--config", cfg)
	p.post(t, "/openai/v1/chat/completions", `{"model":"m"}`)
	p.post(t, "/openai/v1/chat/completions", `{"model":"m"}`) // opens the breaker
	editConfig(t, cfg, addRoute)
	p.hangUp(t, 1)
	for _, path := range []string{"/openai/v1/chat/completions", "/v2/v1/chat/completions"} {
		if code, got := p.post(t, path, `{"model":"m"}`); code != 503 || !strings.Contains(got, "provider_down") {
			t.Errorf("%s after SIGHUP: %d %s, want the open breaker's 503", path, code, got)
		}
	}
	if up.Calls() != 2 {
		t.Errorf("upstream calls %d, want 2: the breaker opened before the reload stays open", up.Calls())
	}
}

// waitLines waits until the file at path holds n lines.
func waitLines(t *testing.T, path string, n int) []byte {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) >= n {
			return b
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s has %d lines, want %d:\n%s", path, bytes.Count(b, []byte("\n")), n, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestServeLogRotationByRenameAndHUP(t *testing.T) {
	up := fake.NewServer("200")
	defer up.Close()
	cfg := writeConfig(t, up.URL, "")
	log := filepath.Join(filepath.Dir(cfg), "attempts.jsonl")
	p := startSluice(t, nil, "serve", "--config", cfg)
	for range 5 {
		p.post(t, "/openai/v1/chat/completions", `{"model":"m"}`)
	}
	waitLines(t, log, 5)
	if err := os.Rename(log, log+".1"); err != nil { // logrotate's rename
		t.Fatal(err)
	}
	p.hangUp(t, 1) // its postrotate
	for range 7 {
		p.post(t, "/openai/v1/chat/completions", `{"model":"m"}`)
	}
	cur := waitLines(t, log, 7)
	old, _ := os.ReadFile(log + ".1")
	if n, m := bytes.Count(old, []byte("\n")), bytes.Count(cur, []byte("\n")); n != 5 || m != 7 {
		t.Errorf("rotated file has %d lines (want 5), new file %d (want 7): lines lost or misplaced", n, m)
	}
}

func TestServeLogRotationByCopyTruncate(t *testing.T) {
	up := fake.NewServer("200")
	defer up.Close()
	cfg := writeConfig(t, up.URL, "")
	log := filepath.Join(filepath.Dir(cfg), "attempts.jsonl")
	p := startSluice(t, nil, "serve", "--config", cfg)
	for range 5 {
		p.post(t, "/openai/v1/chat/completions", `{"model":"m"}`)
	}
	before := waitLines(t, log, 5)
	// logrotate's copytruncate: copy the file, truncate it in place, no signal.
	if err := os.WriteFile(log+".1", before, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, 0); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		p.post(t, "/openai/v1/chat/completions", `{"model":"m"}`)
	}
	cur := waitLines(t, log, 3)
	if bytes.IndexByte(cur, 0) >= 0 || !bytes.HasPrefix(cur, []byte(`{"ts":`)) || bytes.Count(cur, []byte("\n")) != 3 {
		t.Errorf("after copytruncate the log holds %d bytes starting %q, want 3 lines from offset 0 and no NUL hole",
			len(cur), cur[:min(len(cur), 16)])
	}
}
