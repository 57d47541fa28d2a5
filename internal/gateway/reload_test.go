package gateway

import (
	"bufio"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/logfile"
)

// reloadEnv is a gateway whose messages are kept, in front of upstream.
type reloadEnv struct {
	t      *testing.T
	gw     *Gateway
	srv    *httptest.Server
	msgs   *syncBuffer
	config func(edit func(*config.Config)) *config.Config
}

func newReloadEnv(t *testing.T, upstream string, attemptLog io.Writer, edit func(*config.Config)) *reloadEnv {
	t.Helper()
	checkLeaks(t)
	e := &reloadEnv{t: t, msgs: &syncBuffer{}}
	e.config = func(edit func(*config.Config)) *config.Config {
		cfg := config.Default()
		cfg.State.Backend = config.BackendMemory
		cfg.Providers = map[string]config.Provider{
			"openai": {Kind: "openai", BaseURL: upstream, MaxConcurrent: 64},
		}
		cfg.Routes = []config.Route{{Prefix: "/openai", Provider: "openai", Policy: "interactive", RetrySafe: true}}
		cfg.Policies = map[string]sluice.Policy{"interactive": fastPolicy("interactive")}
		if edit != nil {
			edit(cfg)
		}
		return cfg
	}
	cfg := e.config(edit)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	gw, err := New(cfg, Options{AttemptLog: attemptLog, Logger: slog.New(slog.NewTextHandler(e.msgs, nil)),
		Getenv: func(k string) string { return map[string]string{"UPSTREAM_KEY": "sk-injected-1234"}[k] }})
	if err != nil {
		t.Fatal(err)
	}
	e.gw, e.srv = gw, httptest.NewServer(gw)
	t.Cleanup(func() {
		e.srv.CloseClientConnections()
		e.srv.Close()
		gw.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	return e
}

// reload reloads to the test config changed by edit.
func (e *reloadEnv) reload(edit func(*config.Config)) error {
	return e.gw.Reload(func() (*config.Config, error) { return e.config(edit), nil })
}

func (e *reloadEnv) post(path, body string) (int, string) {
	e.t.Helper()
	resp, err := http.Post(e.srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// metric returns the value of the metric line that starts with name.
func (e *reloadEnv) metric(name string) string {
	e.t.Helper()
	_, page := e.get("/metrics")
	for l := range strings.Lines(page) {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// settle waits until no call is in flight: every answer relayed to its
// end, its attempt logged and its upstream connection back in the pool.
func (e *reloadEnv) settle() {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.gw.InFlight() > 0 {
		if time.Now().After(deadline) {
			e.t.Fatalf("%d calls still in flight", e.gw.InFlight())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (e *reloadEnv) get(path string) (int, string) {
	resp, err := http.Get(e.srv.URL + path)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

func TestReloadServesNewRoutesWhileStreamsFinishOnTheOld(t *testing.T) {
	up := fake.NewServer("stream:events=20;interval=20ms")
	defer up.Close()
	e := newReloadEnv(t, up.URL, nil, nil)
	resp, err := http.Post(e.srv.URL+"/openai/v1/chat/completions", "application/json", strings.NewReader(chatStream))
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	// The new config drops /openai and adds /v2: the stream in flight
	// must finish on the old one.
	err = e.reload(func(c *config.Config) {
		c.Routes = []config.Route{{Prefix: "/v2", Provider: "openai", Policy: "interactive", RetrySafe: true}}
	})
	if err != nil {
		t.Fatalf("reload: %v", err)
	}
	rest, err := io.ReadAll(r)
	resp.Body.Close()
	if err != nil || strings.Contains(string(rest), `"error"`) || !strings.HasSuffix(string(rest), "data: [DONE]\n\n") {
		t.Fatalf("stream in flight across the reload: %v\n%s", err, rest)
	}
	if code, _ := e.post("/v2/v1/chat/completions", chatBody); code != 200 {
		t.Errorf("new route after the reload: %d, want 200", code)
	}
	if code, _ := e.post("/openai/v1/chat/completions", chatBody); code != 404 {
		t.Errorf("dropped route after the reload: %d, want 404", code)
	}
	if got := e.metric(`sluice_config_reloads_total{result="ok"}`); got != "1" {
		t.Errorf("reloads ok = %q, want 1", got)
	}
	if !strings.Contains(e.msgs.String(), `msg="config reloaded" routes="/v2 → `) {
		t.Errorf("messages:\n%s\nwant a line saying the config was reloaded, with its routes", e.msgs)
	}
}

func TestReloadRefusesAnInvalidConfig(t *testing.T) {
	up := fake.NewServer("200")
	defer up.Close()
	e := newReloadEnv(t, up.URL, nil, nil)
	for _, tt := range []struct {
		name string
		load func() (*config.Config, error)
		want string
	}{
		{"unset key variable", func() (*config.Config, error) {
			return e.config(func(c *config.Config) {
				c.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: up.URL, APIKeyEnv: "NOT_SET_ANYWHERE", MaxConcurrent: 64}
			}), nil
		}, "NOT_SET_ANYWHERE"},
		{"invalid", func() (*config.Config, error) {
			return e.config(func(c *config.Config) { c.Routes[0].Provider = "nope" }), nil
		}, "nope"},
		{"unreadable", func() (*config.Config, error) { return nil, errors.New("config: line 3: bad duration") }, "bad duration"},
	} {
		before := e.msgs.String()
		if err := e.gw.Reload(tt.load); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Reload = %v, want an error naming %q", tt.name, err, tt.want)
		}
		said := strings.TrimPrefix(e.msgs.String(), before)
		if strings.Count(said, "\n") != 1 || !strings.Contains(said, "reload refused") || !strings.Contains(said, tt.want) {
			t.Errorf("%s: messages %q, want one line saying why", tt.name, said)
		}
		if code, _ := e.post("/openai/v1/chat/completions", chatBody); code != 200 {
			t.Errorf("%s: the old config answered %d, want 200", tt.name, code)
		}
	}
	if got := e.metric(`sluice_config_reloads_total{result="error"}`); got != "3" {
		t.Errorf("reloads error = %q, want 3", got)
	}
	if got := e.metric(`sluice_config_reloads_total{result="ok"}`); got != "0" {
		t.Errorf("reloads ok = %q, want 0", got)
	}
	if up.Calls() != 3 || len(up.Requests()) != 3 || up.Requests()[0].Header.Get("Authorization") != "" {
		t.Errorf("upstream calls %d; want the 3 calls, without an injected key", up.Calls())
	}
}

func TestReloadRefusesWhatTakesARestart(t *testing.T) {
	e := newReloadEnv(t, "http://127.0.0.1:1", nil, nil)
	for _, tt := range []struct {
		key  string
		edit func(*config.Config)
	}{
		{"listen", func(c *config.Config) { c.Listen = "127.0.0.1:9999" }},
		{"state.backend", func(c *config.Config) { c.State.Backend = config.BackendFile }},
		{"state.dir", func(c *config.Config) { c.State.Dir = "/var/lib/elsewhere" }},
		{"log.attempts", func(c *config.Config) { c.Log.Attempts = "/tmp/other.jsonl" }},
		{"limits.read_header_timeout", func(c *config.Config) { c.Limits.ReadHeaderTimeout = time.Minute }},
		{"limits.max_header_bytes", func(c *config.Config) { c.Limits.MaxHeaderBytes = 1 << 20 }},
		{"tracing", func(c *config.Config) { c.Tracing.Enabled = true }},
		{"tracing", func(c *config.Config) { c.Tracing.SampleRatio = 0.5 }},
	} {
		err := e.reload(tt.edit)
		var re *RestartError
		if !errors.As(err, &re) || re.Key != tt.key || !strings.Contains(err.Error(), "restart") {
			t.Errorf("changing %s: %v, want a *RestartError naming it", tt.key, err)
		}

	}
	if e.gw.Config().Listen != "127.0.0.1:8080" {
		t.Errorf("config after refused reloads: listen %s", e.gw.Config().Listen)
	}
}

// TestRestartErrorMasksStatePassword: a changed Redis URL is refused
// without its password reaching the message, which goes to the log.
func TestRestartErrorMasksStatePassword(t *testing.T) {
	old, cfg := config.Default(), config.Default()
	old.State = config.State{Backend: config.BackendRedis, URL: "redis://u:oldsecret@127.0.0.1:6379/0"}
	cfg.State = config.State{Backend: config.BackendRedis, URL: "redis://u:newsecret@127.0.0.1:6380/0"}
	err := needsRestart(old, cfg)
	var re *RestartError
	if !errors.As(err, &re) || re.Key != "state.url" {
		t.Fatalf("%v, want a *RestartError for state.url", err)
	}
	if strings.Contains(err.Error(), "oldsecret") || strings.Contains(err.Error(), "newsecret") || !strings.Contains(err.Error(), "6380") {
		t.Errorf("message %q: want the URLs without their passwords", err)
	}
}

// TestReloadRefusesAnotherSentinelStore: a reload that names other
// sentinels (or another master) is refused, naming both stores: the
// gateway keeps the client it opened at start.
func TestReloadRefusesAnotherSentinelStore(t *testing.T) {
	old, cfg := config.Default(), config.Default()
	old.State = config.State{Backend: config.BackendRedis,
		Redis: config.Redis{Mode: "sentinel", Master: "mymaster", Addrs: []string{"10.0.0.1:26379", "10.0.0.2:26379"}}}
	cfg.State = old.State
	cfg.State.Redis.Addrs = []string{"10.0.0.1:26379", "10.0.0.3:26379"}
	err := needsRestart(old, cfg)
	var re *RestartError
	if !errors.As(err, &re) || re.Key != "state.redis" ||
		!strings.Contains(err.Error(), `"redis-sentinel master=mymaster sentinels=10.0.0.1:26379,10.0.0.2:26379" to "redis-sentinel master=mymaster sentinels=10.0.0.1:26379,10.0.0.3:26379"`) {
		t.Errorf("sentinels changed: %v, want a *RestartError for state.redis naming both", err)
	}
	if err := needsRestart(old, old); err != nil {
		t.Errorf("nothing changed: %v", err)
	}
}

func TestReloadKeepsBreakersOpen(t *testing.T) {
	up := fake.NewServer("500")
	defer up.Close()
	open := func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Retry.MaxAttempts = 1
		p.Breaker.Failures, p.Breaker.Cool = 2, time.Hour
		c.Policies["interactive"] = p
	}
	e := newReloadEnv(t, up.URL, nil, open)
	e.post("/openai/v1/chat/completions", chatBody)
	e.post("/openai/v1/chat/completions", chatBody) // opens the breaker
	if err := e.reload(func(c *config.Config) {
		open(c)
		c.Routes = append(c.Routes, config.Route{Prefix: "/v2", Provider: "openai", Policy: "interactive", RetrySafe: true})
	}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/openai/v1/chat/completions", "/v2/v1/chat/completions"} {
		if code, got := e.post(path, chatBody); code != 503 || !strings.Contains(got, "provider_down") {
			t.Errorf("%s after the reload: %d %s, want the open breaker's 503", path, code, got)
		}
	}
	if up.Calls() != 2 {
		t.Errorf("upstream calls %d, want 2: the breaker opened before the reload stays open", up.Calls())
	}
}

func TestReloadKeepsUpstreamConnections(t *testing.T) {
	var conns atomic.Int64
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[]}`)
	}))
	up.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	up.Start()
	defer up.Close()
	e := newReloadEnv(t, up.URL, nil, nil)
	for i := range 3 {
		if code, _ := e.post("/openai/v1/chat/completions", chatBody); code != 200 {
			t.Fatalf("call %d: %d", i, code)
		}
		e.settle()
		if err := e.reload(func(c *config.Config) {
			p := c.Policies["interactive"]
			p.Retry.MaxAttempts = 2 + i // a real change, same connect timeout
			c.Policies["interactive"] = p
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("upstream connections %d across 3 reloads, want 1 kept open", n)
	}
}

// failingLog fails its first fails writes with ENOSPC, then works.
type failingLog struct {
	mu    sync.Mutex
	fails int
	lines int
}

func (w *failingLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fails > 0 {
		w.fails--
		return 0, syscall.ENOSPC
	}
	w.lines++
	return len(p), nil
}

func TestAttemptLogFaultNeverFailsACall(t *testing.T) {
	up := fake.NewServer("200")
	defer up.Close()
	w := &failingLog{fails: 6}
	msgs := &syncBuffer{}
	e := newReloadEnv(t, up.URL, logfile.New(w, slog.New(slog.NewTextHandler(msgs, nil))), nil)
	start := time.Now()
	for i := range 10 {
		if code, _ := e.post("/openai/v1/chat/completions", chatBody); code != 200 {
			t.Errorf("call %d while the log fails: %d, want 200", i, code)
		}
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("10 calls took %v", d)
	}
	e.settle()
	if got := e.metric("sluice_attempt_log_errors_total"); got != "6" {
		t.Errorf("sluice_attempt_log_errors_total = %q, want 6", got)
	}
	w.mu.Lock()
	lines := w.lines
	w.mu.Unlock()
	if lines != 4 {
		t.Errorf("lines written %d, want 4", lines)
	}
	out := msgs.String()
	if strings.Count(out, "\n") != 2 || strings.Count(out, "writing failed") != 1 || strings.Count(out, "works again") != 1 {
		t.Errorf("messages:\n%s\nwant one line when writing failed, one when it worked again", out)
	}
}
