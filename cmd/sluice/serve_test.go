package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
)

// TestMain lets tests run the command as a real process: the test binary
// re-executes itself with SLUICE_TEST_MAIN=1.
func TestMain(m *testing.M) {
	if os.Getenv("SLUICE_TEST_MAIN") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// proc is a `sluice` process started by a test.
type proc struct {
	cmd    *exec.Cmd
	addr   string
	stderr *lockedText
	done   chan error
}

// lockedText is a process's stderr, read while it is being written.
type lockedText struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedText) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedText) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var addrRE = regexp.MustCompile(`addr=http://(\S+)`)

// startSluice runs `sluice args…` and, for serve, waits until it listens.
// postChat sends a small chat call to p's /openai route and returns the
// status of the answer, whose body it reads and drops.
func postChat(t *testing.T, p *proc) int {
	t.Helper()
	resp, err := http.Post("http://"+p.addr+"/openai/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func startSluice(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), append(env, "SLUICE_TEST_MAIN=1")...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stderr: &lockedText{}, done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.WriteString(line + "\n")
			if m := addrRE.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
		p.done <- cmd.Wait()
	}()
	select {
	case p.addr = <-addr:
	case <-time.After(20 * time.Second):
		t.Fatalf("sluice did not start listening; stderr:\n%s", p.stderr.String())
	}
	return p
}

func writeConfig(t *testing.T, upstream, extra string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	cfg := fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: memory, dir: %s}
log: {attempts: %s}
providers:
  openai: {kind: openai, base_url: %s}
routes:
  - {prefix: /openai, provider: openai, policy: interactive}
policies:
  interactive:
    timeout: {connect: 1s, first_byte: 2s, idle: 2s, total: 20s}
%s`, dir, filepath.Join(dir, "attempts.jsonl"), upstream, extra)
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const streamReq = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// directStream returns the stream the fake at upstream sends for
// streamReq, asked directly: what a relayed one must match.
func directStream(t *testing.T, upstream string) string {
	t.Helper()
	direct, err := http.Post(upstream+"/v1/chat/completions", "application/json", strings.NewReader(streamReq))
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Body.Close()
	want, _ := io.ReadAll(direct.Body)
	return string(want)
}

// openStream starts streamReq through the gateway p and reads its first
// line, so the stream is known to be in flight.
func openStream(t *testing.T, p *proc) (*http.Response, *bufio.Reader, string) {
	t.Helper()
	resp, err := http.Post("http://"+p.addr+"/openai/v1/chat/completions", "application/json", strings.NewReader(streamReq))
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	first, err := r.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	return resp, r, first
}

func TestServeDrainsStreamsOnSIGTERM(t *testing.T) {
	up := fake.NewServer("stream:events=20;interval=50ms")
	defer up.Close()
	want := directStream(t, up.URL)

	p := startSluice(t, nil, "serve", "--config", writeConfig(t, up.URL, ""))
	resp, r, first := openStream(t, p)
	p.cmd.Process.Signal(syscall.SIGTERM)
	rest, err := io.ReadAll(r)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("stream cut by the drain: %v", err)
	}
	got := first + string(rest)
	if n, m := strings.Count(got, "\n\n"), strings.Count(want, "\n\n"); n != m || !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Fatalf("drained stream has %d events, want %d ending in [DONE]:\n%s", n, m, got)
	}
	if normalise(got) != normalise(want) {
		t.Errorf("drained stream differs from the direct one:\n%s\nvs\n%s", got, want)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exit: %v; stderr:\n%s", err, p.stderr)
		}
		p.done <- nil
	case <-time.After(10 * time.Second):
		t.Fatal("sluice did not exit after the drain")
	}
}

// normalise blanks the per-answer ids and timestamps of a fake stream.
func normalise(s string) string {
	s = regexp.MustCompile(`"id":"[^"]*"`).ReplaceAllString(s, `"id":""`)
	return regexp.MustCompile(`"created":\d+`).ReplaceAllString(s, `"created":0`)
}

func TestServeDrainDeadlineEndsStreamsWithErrorEvent(t *testing.T) {
	up := fake.NewServer("stream:events=400;interval=50ms") // 20s
	defer up.Close()
	p := startSluice(t, nil, "serve", "--config", writeConfig(t, up.URL, "drain: 300ms\n"))
	resp, err := http.Post("http://"+p.addr+"/openai/v1/chat/completions", "application/json", strings.NewReader(streamReq))
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	rest, _ := io.ReadAll(r)
	resp.Body.Close()
	if d := time.Since(start); d > 6*time.Second {
		t.Errorf("stream ran %v after SIGTERM, want about the 300ms drain (within 6s on a busy machine)", d)
	}
	if strings.Contains(string(rest), "[DONE]") || !strings.Contains(string(rest), `"code":"shutting_down"`) {
		t.Errorf("stream after the drain deadline: %q, want an error event and no [DONE]", rest)
	}
	if err := <-p.done; err != nil {
		t.Errorf("exit: %v", err)
	}
	p.done <- nil
}

func TestServeDefaultsAnswerHealth(t *testing.T) {
	state := t.TempDir()
	p := startSluice(t, []string{"XDG_STATE_HOME=" + state, "SLUICE_CONFIG="}, "serve", "--listen", "127.0.0.1:0")
	resp, err := http.Get("http://" + p.addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("healthz %d", resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(state, "sluice", "attempts.jsonl")); err != nil {
		t.Errorf("attempt log not under the state dir: %v", err)
	}
	if !strings.Contains(p.stderr.String(), `config="no --config and no $SLUICE_CONFIG: the built-in defaults"`) {
		t.Errorf("the start line does not say the built-in defaults are served:\n%s", p.stderr.String())
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if err := <-p.done; err != nil {
		t.Errorf("exit after SIGINT: %v", err)
	}
	p.done <- nil
}

func TestServeRefusesBadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ cfg, want string }{
		{"listen: 127.0.0.1:0\nbogus: 1\n", "bogus"},
		{"policies:\n  interactive:\n    timeout: {total: 30x}\n", "30x"},
		{"routes:\n  - {prefix: /x, provider: nope}\n", "nope"},
		{"policies:\n  interactive:\n    timeout: {connect: 5s, first_byte: 20s, total: 10s}\n", "total"},
	} {
		path := filepath.Join(dir, "bad.yaml")
		os.WriteFile(path, []byte(tt.cfg), 0o600)
		var out strings.Builder
		code := run([]string{"serve", "--config", path}, strings.NewReader(""), &out, &out)
		if code != exitUsage || !strings.Contains(out.String(), tt.want) || strings.Count(strings.TrimSpace(out.String()), "\n") != 0 {
			t.Errorf("config %q: exit %d, output %q; want exit 2 and one line naming %q", tt.cfg, code, out.String(), tt.want)
		}
	}
}

func TestGatewaysShareFileBreakers(t *testing.T) {
	up := fake.NewServer("500")
	defer up.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: file, dir: %s}
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: %s}
routes:
  - {prefix: /openai, provider: openai}
policies:
  interactive:
    retry: {max_attempts: 1}
    breaker: {failures: 2, cool: 1h}
`, dir, up.URL)), 0o600)
	a := startSluice(t, nil, "serve", "--config", cfg)
	b := startSluice(t, nil, "serve", "--config", cfg)
	post := func(p *proc) int { return postChat(t, p) }
	post(a)
	post(a) // opens the shared breaker
	if got := post(b); got != 503 {
		t.Errorf("the other gateway answered %d, want a fast 503", got)
	}
	if up.Calls() != 2 {
		t.Errorf("upstream calls %d, want 2", up.Calls())
	}

	var out strings.Builder
	if code := run([]string{"breakers", "--config", cfg}, strings.NewReader(""), &out, &out); code != 0 || !strings.Contains(out.String(), "openai") || !strings.Contains(out.String(), "open") {
		t.Fatalf("sluice breakers: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"breakers", "reset", "openai", "--config", cfg}, strings.NewReader(""), &out, &out); code != 0 {
		t.Fatalf("sluice breakers reset: exit %d: %s", code, out.String())
	}
	if got := post(b); got != 500 {
		t.Errorf("after the reset the gateway answered %d, want the provider's 500", got)
	}
	if code := run([]string{"breakers", "reset", "nope", "--config", cfg}, strings.NewReader(""), &out, &out); code != exitUsage {
		t.Errorf("reset of an unknown breaker: exit %d", code)
	}
}
