package readme

import (
	"bufio"
	"context"
	"io"
	"net"
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
)

// commands returns a shell block's commands: continuation lines joined,
// comments cut, && split.
func commands(text string) []string {
	var out []string
	for _, l := range strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n") {
		if i := strings.Index(l, " #"); i >= 0 {
			l = l[:i]
		}
		for _, c := range strings.Split(l, "&&") {
			if c = strings.TrimSpace(c); c != "" && !strings.HasPrefix(c, "#") {
				out = append(out, c)
			}
		}
	}
	return out
}

// words splits a command into words: single and double quotes group, as
// the shell's do (no escapes inside them).
func words(c string) []string {
	var out []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range c {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// sluiceArgs returns the arguments a command gives sluice (after `sluice`
// or `go run ./cmd/sluice`), and whether it runs sluice.
func sluiceArgs(c string) ([]string, bool) {
	w := words(c)
	switch {
	case len(w) > 0 && w[0] == "sluice":
		return w[1:], true
	case len(w) > 2 && w[0] == "go" && w[1] == "run" && w[2] == "./cmd/sluice":
		return w[3:], true
	}
	return nil, false
}

// checkShell checks each command of a block: sluice's subcommands and
// flags against the binary's --help (`sluice version` is run), the files
// the others name; a command it knows no check for fails.
func checkShell(t *testing.T, b block) {
	for _, c := range commands(b.text) {
		if args, ok := sluiceArgs(c); ok {
			checkSluiceFlags(t, c, args)
			continue
		}
		w := words(c)
		switch {
		case c == "./scripts/test":
			if fi, err := os.Stat(filepath.Join(root(t), "scripts", "test")); err != nil || fi.Mode()&0o111 == 0 {
				t.Errorf("%s: %v, mode %v; want an executable script", c, err, fi)
			}
		case strings.HasPrefix(c, "go install github.com/sluice-llm/sluice/cmd/sluice@"):
			// Needs the module proxy (the row's reason).
		case c == "go install ./cmd/sluice", c == "CGO_ENABLED=0 go build -trimpath -o sluice ./cmd/sluice":
			binary(t) // TestMain built it so
		case len(w) == 3 && w[0] == "cp":
			if _, err := os.Stat(w[1]); err != nil {
				t.Logf("%s: %v (a host without the CA bundle there needs another path)", c, err)
			}
		case len(w) > 1 && w[0] == "docker" && w[1] == "build":
			file := "Dockerfile"
			for i, a := range w {
				if a == "-f" && i+1 < len(w) {
					file = w[i+1]
				}
			}
			if _, err := os.Stat(filepath.Join(root(t), file)); err != nil {
				t.Errorf("%s: %v", c, err)
			}
		default:
			t.Errorf("%s: no check for this command: add one to checkShell", c)
		}
	}
}

// checkSluiceFlags checks that sluice has the subcommand and each flag
// args give it; `sluice version` is run.
func checkSluiceFlags(t *testing.T, c string, args []string) {
	t.Helper()
	if len(args) == 0 {
		t.Errorf("%s: no subcommand", c)
		return
	}
	if args[0] == "version" {
		out, err := exec.Command(binary(t), "version").CombinedOutput()
		if err != nil || len(out) == 0 {
			t.Errorf("%s: %v\n%s", c, err, out)
		}
		return
	}
	out, _ := exec.Command(binary(t), args[0], "--help").CombinedOutput()
	if !strings.Contains(string(out), "Usage: sluice "+args[0]) {
		t.Errorf("%s: sluice %s --help:\n%s", c, args[0], out)
		return
	}
	for _, a := range args[1:] {
		if name, ok := strings.CutPrefix(a, "-"); ok {
			name, _, _ = strings.Cut(strings.TrimPrefix(name, "-"), "=")
			if !strings.Contains(string(out), "  -"+name+" ") && !strings.Contains(string(out), "  -"+name+"\n") {
				t.Errorf("%s: sluice %s has no flag -%s:\n%s", c, args[0], name, out)
			}
		}
	}
}

// served is a sluice serve process started by a test.
type served struct {
	addr   string // host:port
	fake   string // the fake's URL under --fake
	stdout *syncBuf
	stderr *syncBuf
}

// syncBuf is a process's output, read while it is written.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var (
	addrRE = regexp.MustCompile(`msg="sluice serving" addr=http://(\S+)`)
	fakeRE = regexp.MustCompile(`upstream="FAKE (\S+)"`)
)

// serve runs the built binary with args (serve …) and env, until it
// listens; it is stopped with SIGTERM when t ends.
func serve(t *testing.T, env []string, args ...string) *served {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	s := &served{stdout: &syncBuf{}, stderr: &syncBuf{}}
	cmd.Stdout, cmd.Stderr = s.stdout, s.stderr
	cmd.Env = append(os.Environ(), append([]string{"XDG_STATE_HOME=" + t.TempDir(), "SLUICE_CONFIG="}, env...)...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := addrRE.FindStringSubmatch(s.stderr.String()); m != nil {
			s.addr = m[1]
			if f := fakeRE.FindStringSubmatch(s.stderr.String()); f != nil {
				s.fake = f[1]
			}
			return s
		}
		select {
		case <-done:
			t.Fatalf("sluice %s exited:\n%s", strings.Join(args, " "), s.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("sluice %s never listened:\n%s", strings.Join(args, " "), s.stderr.String())
	return nil
}

// proxyTrap is an HTTP proxy that answers nothing and records the
// connections made to it: set as HTTPS_PROXY and HTTP_PROXY, it sees every
// connection the gateway would make off loopback.
type proxyTrap struct {
	url   string
	mu    sync.Mutex
	lines []string // each connection's request line
}

func newProxyTrap(t *testing.T) *proxyTrap {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	p := &proxyTrap{url: "http://" + ln.Addr().String()}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(5 * time.Second))
			l, _ := bufio.NewReader(c).ReadString('\n')
			p.mu.Lock()
			p.lines = append(p.lines, strings.TrimSpace(l))
			p.mu.Unlock()
			io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			c.Close()
		}
	}()
	return p
}

func (p *proxyTrap) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// curlRequest makes the request a curl command describes (its URL, -H
// headers, -d body), to addr in place of 127.0.0.1:8080.
func curlRequest(t *testing.T, c, addr string) (*http.Response, string) {
	t.Helper()
	w := words(c)
	if len(w) == 0 || w[0] != "curl" {
		t.Fatalf("%q is no curl command", c)
	}
	var url, body string
	hdr := http.Header{}
	for i := 1; i < len(w); i++ {
		switch a := w[i]; {
		case a == "-H" && i+1 < len(w):
			k, v, _ := strings.Cut(w[i+1], ":")
			hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			i++
		case a == "-d" && i+1 < len(w):
			body = w[i+1]
			i++
		case strings.HasPrefix(a, "http://"):
			url = strings.Replace(a, "127.0.0.1:8080", addr, 1)
		case a == "-s" || a == "-i" || a == "-si":
		default:
			t.Fatalf("%s: curl argument %q: no support for it in curlRequest", c, a)
		}
	}
	method := http.MethodGet
	if body != "" {
		method = http.MethodPost
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = hdr
	resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// checkTryIt runs the "Try it" block: the built binary started as the
// block says (on a free port), and the block's curl request to it, must
// give 200 and the fake's answer, with no connection off loopback (a
// proxy trap catches any). The same request to a gateway started without
// --fake reaches the trap: the trap does see what the gateway dials.
func checkTryIt(t *testing.T, b block) {
	cmds := commands(b.text)
	if len(cmds) != 2 {
		t.Fatalf("the Try it block has %d commands, want 2 (serve, curl): %q", len(cmds), cmds)
	}
	args, ok := sluiceArgs(cmds[0])
	if !ok || len(args) == 0 || args[0] != "serve" {
		t.Fatalf("the Try it block starts with %q, not sluice serve", cmds[0])
	}
	trap := newProxyTrap(t)
	env := []string{"HTTPS_PROXY=" + trap.url, "HTTP_PROXY=" + trap.url, "https_proxy=" + trap.url, "http_proxy=" + trap.url, "NO_PROXY=", "no_proxy="}
	s := serve(t, env, append(args, "--listen", "127.0.0.1:0")...)
	resp, body := curlRequest(t, cmds[1], s.addr)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"content":"This is a fake answer."`) {
		t.Errorf("the Try it request: %d %s; want 200 and the fake's answer", resp.StatusCode, body)
	}
	if !strings.Contains(s.stderr.String(), "FAKE UPSTREAM") || s.fake == "" {
		t.Errorf("the start lines do not say the providers are the fake:\n%s", s.stderr.String())
	}
	// The attempt's line may follow the answer by a moment.
	for end := time.Now().Add(10 * time.Second); !strings.Contains(s.stdout.String(), `"outcome":"ok"`); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Errorf("no attempt line on the gateway's stdout:\n%s", s.stdout.String())
			break
		}
	}
	checkTryItProse(t, cmds[1], s.addr)
	if seen := trap.seen(); len(seen) != 0 {
		t.Errorf("serve --fake connected off loopback: %q", seen)
	}

	plain := serve(t, env, "serve", "--listen", "127.0.0.1:0")
	resp, _ = curlRequest(t, cmds[1], plain.addr)
	if seen := trap.seen(); len(seen) == 0 || !strings.Contains(seen[0], "api.openai.com") || resp.StatusCode == http.StatusOK {
		t.Errorf("without --fake: %d, the trap saw %q; want the call to api.openai.com caught", resp.StatusCode, seen)
	}
}

// checkTryItProse checks what the README says after the Try it block: the
// curl with its script header gets 200 after the attempts it names, and
// /anthropic/v1/messages answers as Anthropic.
func checkTryItProse(t *testing.T, curl, addr string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("`(-i -H '[^']+')` to watch the gateway retry [^`]*`Sluice-Attempts: (\\d+)`").FindStringSubmatch(string(b))
	if m == nil {
		t.Fatal("README's Try it says nothing of a script header and its Sluice-Attempts")
	}
	resp, body := curlRequest(t, strings.Replace(curl, "curl -s", "curl -s "+m[1], 1), addr)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Sluice-Attempts") != m[2] || !strings.Contains(body, "This is a fake answer.") {
		t.Errorf("with %s: %d, Sluice-Attempts %q, %s; want 200 after %s", m[1], resp.StatusCode, resp.Header.Get("Sluice-Attempts"), body, m[2])
	}
	anthropic := `curl -s http://127.0.0.1:8080/anthropic/v1/messages -H 'Content-Type: application/json' ` +
		`-d '{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hello"}]}'`
	if resp, body := curlRequest(t, anthropic, addr); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"type":"message"`) {
		t.Errorf("/anthropic/v1/messages: %d %s; want Anthropic's message", resp.StatusCode, body)
	}
}
