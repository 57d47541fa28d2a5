package gateway

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
)

// Hostile input never escapes a route: no client-chosen host is dialled,
// no path trick reaches the provider, no client key passes an injected
// one, no secret shows in a log, an error or a metric.

// canary is a loopback listener that counts the connections it accepts:
// any is a request the gateway should never have made.
type canary struct {
	ln    net.Listener
	hits  atomic.Int64
	done  chan struct{}
	label string // host:port
}

func newCanary(t *testing.T) *canary {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &canary{ln: ln, done: make(chan struct{}), label: ln.Addr().String()}
	go func() {
		defer close(c.done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.hits.Add(1)
			conn.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-c.done
	})
	return c
}

// rawAnswer is what one request written byte by byte got back.
type rawAnswer struct {
	status int // 0: no response
	header http.Header
	body   string
	err    error
}

// rawDo sends req as written on a fresh connection to addr and reads one
// response.
func rawDo(addr string, req []byte) rawAnswer {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return rawAnswer{err: err}
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(3 * time.Second))
	if _, err := conn.Write(req); err != nil {
		return rawAnswer{err: err}
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return rawAnswer{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return rawAnswer{status: resp.StatusCode, header: resp.Header, body: string(b), err: err}
}

// hostileCase is one request of the hostile run.
type hostileCase struct {
	method, target, headers string
	lenient                 bool // absolute-form or CONNECT: Go's server may drop it itself
}

func (c hostileCase) bytes(gwAddr string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\n", c.method, c.target)
	b.WriteString(strings.ReplaceAll(c.headers, "{GW}", gwAddr))
	b.WriteString("Connection: close\r\nContent-Type: application/json\r\n")
	if c.method == http.MethodPost {
		fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n%s", len(chatBody), chatBody)
	} else {
		b.WriteString("\r\n")
	}
	return b.Bytes()
}

// hostileCases is the cross product of route prefixes, path payloads,
// header sets and methods, with {C} standing for the canary's host:port.
func hostileCases(canaryAddr string) []hostileCase {
	prefixes := []string{"/openai", "/anthropic", "/nope", ""}
	payloads := []string{
		"/../", "/..%2f", "/..%2F", "/%2e%2e/", "/%2E%2E/", "/.%2e/", "/%2e./",
		"%2F%2F{C}/", "/%2F%2F{C}/", "//{C}/", "/{C}/../../", "@{C}/", "/@{C}/",
		`\..\`, `/\..\`, "/%5c..%5c", "/%00/", "%00", "/..%00/",
		";/../", "/;/../", "/..;/", "/./", "/v1/../../", "/../../../{C}/",
		"/%252e%252e/", "/%25%32%65%25%32%65/", "/%252f/", "/.;/",
	}
	var targets []string
	for _, p := range prefixes {
		tail := "v1/chat/completions"
		if p == "/anthropic" {
			tail = "v1/messages"
		}
		for _, pl := range payloads {
			targets = append(targets, p+pl+tail)
		}
	}
	special := []string{
		"http://{C}/openai/v1/chat/completions", "http://{C}/anthropic/v1/messages",
		"http://{C}", "https://{C}/openai/v1/chat/completions", "{C}", "*", "//{C}/openai/v1/chat/completions",
	}
	headerSets := []string{
		"Host: {GW}\r\n",
		"Host: {C}\r\n",
		"Host: {GW}\r\nX-Forwarded-Host: {C}\r\nX-Forwarded-Proto: http\r\n",
		"Host: {GW}\r\nForwarded: host={C};proto=http\r\n",
		"Host: {GW}\r\nX-Original-URL: //{C}/v1/chat/completions\r\nX-Rewrite-URL: http://{C}/v1/messages\r\n",
		"Host: {GW}\r\nHost: {C}\r\n",
	}
	methods := []string{"GET", "POST", "CONNECT", "OPTIONS", "TRACE"}
	var cases []hostileCase
	add := func(target string, abs bool) {
		for _, h := range headerSets {
			for _, m := range methods {
				cases = append(cases, hostileCase{
					method:  m,
					target:  strings.ReplaceAll(target, "{C}", canaryAddr),
					headers: strings.ReplaceAll(h, "{C}", canaryAddr),
					lenient: abs || m == "CONNECT",
				})
			}
		}
	}
	for _, tg := range targets {
		add(tg, false)
	}
	for _, tg := range special {
		add(tg, !strings.HasPrefix(tg, "/"))
	}
	return cases
}

// hostileTally is what the hostile run saw.
type hostileTally struct {
	mu        sync.Mutex
	status    map[int]int
	forwarded int      // answers relayed from the provider
	dropped   []string // strict cases with no response
	lenient   int      // absolute-form or CONNECT cases with no response
	bad5xx    []string
	odd       []string // answered by the gateway with neither 400, 404 nor 405
}

func (h *hostileTally) add(c hostileCase, a rawAnswer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.status[a.status]++
	what := fmt.Sprintf("%s %s [%q]", c.method, c.target, c.headers)
	switch {
	case a.status == 0 && c.lenient:
		h.lenient++
	case a.status == 0:
		h.dropped = append(h.dropped, fmt.Sprintf("%s: %v", what, a.err))
	case a.status >= 500:
		h.bad5xx = append(h.bad5xx, fmt.Sprintf("%s: %d %s", what, a.status, a.body))
	case a.header.Get("Sluice-Attempts") != "":
		h.forwarded++ // judged by what the provider received
	case c.method == http.MethodOptions && c.target == "*" && a.status == http.StatusOK:
		// net/http answers OPTIONS * itself; no handler runs.
	case a.status != 400 && a.status != 404 && a.status != 405:
		h.odd = append(h.odd, fmt.Sprintf("%s: %d %s", what, a.status, a.body))
	}
}

// run sends every case over 8 connections at a time.
func (h *hostileTally) run(gwAddr string, cases []hostileCase) {
	work := make(chan hostileCase)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for c := range work {
				h.add(c, rawDo(gwAddr, c.bytes(gwAddr)))
			}
		})
	}
	for _, c := range cases {
		work <- c
	}
	close(work)
	wg.Wait()
}

// escapes reports whether a path the provider received is not a plain API
// path under the route. A first segment naming the canary's address is a
// path on the configured host, not a host: the canary's count checks that.
func escapes(path, canaryAddr string) bool {
	path = strings.TrimPrefix(path, "/@"+canaryAddr)
	return !strings.HasPrefix(path, "/v1/") || strings.Contains(path, "..") ||
		strings.Contains(path, "//") || strings.Contains(path, "%") || strings.Contains(path, ";")
}

func TestHostileRequestsNeverEscapeARoute(t *testing.T) {
	e := newEnv(t, "200", nil)
	cn := newCanary(t)
	gwAddr := e.srv.Listener.Addr().String()
	cases := hostileCases(cn.label)
	if len(cases) < 2000 {
		t.Fatalf("only %d hostile cases, want at least 2000", len(cases))
	}
	tally := &hostileTally{status: make(map[int]int)}
	start := time.Now()
	tally.run(gwAddr, cases)
	t.Logf("%d hostile requests in %v; statuses %v; %d forwarded; %d lenient drops",
		len(cases), time.Since(start), tally.status, tally.forwarded, tally.lenient)

	if n := cn.hits.Load(); n != 0 {
		t.Errorf("the canary at %s saw %d connections, want 0", cn.label, n)
	}
	reqs := e.up.Requests()
	if len(reqs) != tally.forwarded {
		t.Errorf("the provider got %d requests, the gateway relayed %d answers", len(reqs), tally.forwarded)
	}
	gaps := make(map[string]bool)
	for _, r := range reqs {
		if escapes(r.Path, cn.label) || r.Method == http.MethodConnect || r.Method == http.MethodTrace {
			gaps[r.Method+" "+r.Path] = true
		}
	}
	report(t, "answered 5xx", tally.bad5xx)
	report(t, "dropped with no response", tally.dropped)
	report(t, "answered by the gateway with neither 400, 404 nor 405", tally.odd)
	if len(gaps) > 0 {
		list := slices.Sorted(maps.Keys(gaps))
		t.Errorf("%d kinds of hostile request reached the provider, e.g. %q", len(list), list[:min(len(list), 6)])
	}
}

// report fails the test with the first few of a list of problems.
func report(t *testing.T, what string, list []string) {
	t.Helper()
	if len(list) == 0 {
		return
	}
	sort.Strings(list)
	t.Errorf("%d requests %s, e.g.:\n%s", len(list), what, strings.Join(list[:min(len(list), 8)], "\n"))
}

// TestPathTricksRejected: paths that hold an encoded dot or slash once
// decoded (double encoding), or a dot segment carrying a ;parameter, are
// the tricks that make a proxy and a server behind it disagree on the path
// (servers that decode twice; Tomcat-style "..;"). They must get the same
// 400 as a plain "..".
func TestPathTricksRejected(t *testing.T) {
	e := newEnv(t, "200", nil)
	for _, path := range []string{
		"/openai/%252e%252e/v1/chat/completions",
		"/openai/%25%32%65%25%32%65/v1/chat/completions",
		"/openai/v1/%252E%252E/chat/completions",
		"/openai/%252f/v1/chat/completions",
		"/openai/..%252f/v1/chat/completions",
		"/openai/..;/v1/chat/completions",
		"/openai/v1/.;/chat/completions",
		"/anthropic/..;x=1/v1/messages",
	} {
		gwAddr := e.srv.Listener.Addr().String()
		c := hostileCase{method: "POST", target: path, headers: "Host: {GW}\r\n"}
		a := rawDo(gwAddr, c.bytes(gwAddr))
		if a.status != 400 {
			t.Errorf("POST %s: %d %v, want 400", path, a.status, a.err)
		}
	}
	for _, r := range e.up.Requests() {
		t.Errorf("upstream got %s %q", r.Method, r.Path)
	}
}

// TestTraceAndConnectNotForwarded: a TRACE forwarded to a provider that
// echoes it (as RFC 9110 says TRACE does, and as web servers do by default)
// hands the client the injected key; CONNECT is never an API call.
func TestTraceAndConnectNotForwarded(t *testing.T) {
	var echoed atomic.Int64
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		echoed.Add(1)
		w.Header().Set("Content-Type", "message/http")
		fmt.Fprintf(w, "%s %s %s\r\n", r.Method, r.RequestURI, r.Proto)
		r.Header.Write(w)
	}))
	t.Cleanup(echo.Close)
	e := newEnv(t, "200", func(c *config.Config) {
		c.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: echo.URL, MaxConcurrent: 4, APIKeyEnv: "UPSTREAM_KEY"}
	})
	gwAddr := e.srv.Listener.Addr().String()
	for _, m := range []string{http.MethodTrace, http.MethodConnect} {
		c := hostileCase{method: m, target: "/openai/v1/chat/completions", headers: "Host: {GW}\r\nAuthorization: Bearer sk-client\r\n"}
		a := rawDo(gwAddr, c.bytes(gwAddr))
		if a.status != 405 {
			t.Errorf("%s: status %d %v, want 405", m, a.status, a.err)
		}
		if strings.Contains(a.body, "sk-injected-1234") {
			t.Errorf("%s: the answer hands the client the injected key:\n%s", m, a.body)
		}
	}
	if n := echoed.Load(); n != 0 {
		t.Errorf("the provider got %d TRACE/CONNECT requests, want 0", n)
	}
}

// TestHostileControlRequestsArrive shows the raw client and the upstream
// check work: the same harness delivers plain requests.
func TestHostileControlRequestsArrive(t *testing.T) {
	e := newEnv(t, "200", nil)
	gwAddr := e.srv.Listener.Addr().String()
	for _, target := range []string{"/openai/v1/chat/completions", "/anthropic/v1/messages"} {
		c := hostileCase{method: "POST", target: target, headers: "Host: {GW}\r\n"}
		a := rawDo(gwAddr, c.bytes(gwAddr))
		if a.status != 200 {
			t.Errorf("POST %s: %d %v, want 200", target, a.status, a.err)
		}
	}
	if e.up.Calls() != 2 {
		t.Errorf("upstream calls %d, want 2", e.up.Calls())
	}
}

const hostileKey = "sk-client-do-not-forward-7c1e55a0b9"

func TestClientKeyNeverPassesAnInjectedKey(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		for name, p := range c.Providers {
			p.APIKeyEnv = "UPSTREAM_KEY"
			c.Providers[name] = p
		}
	})
	gwAddr := e.srv.Listener.Addr().String()
	headerSets := []string{
		"authorization: Bearer {K}\r\n",
		"AUTHORIZATION: Bearer {K}\r\n",
		"Authorization: bearer {K}\r\n",
		"Authorization: {K}\r\n",
		"x-api-key: {K}\r\n",
		"X-API-KEY: {K}\r\n",
		"X-Api-Key: {K}\r\n",
		"authorization: Bearer other\r\nAUTHORIZATION: Bearer {K}\r\n",
		"x-api-key: other\r\nX-API-KEY: {K}\r\n",
		"Authorization: Bearer {K}\r\nx-api-key: {K}\r\nProxy-Authorization: Bearer {K}\r\n",
	}
	routes := []struct{ target, wantHeader, wantValue string }{
		{"/openai/v1/chat/completions", "Authorization", "Bearer sk-injected-1234"},
		{"/anthropic/v1/messages", "X-Api-Key", "sk-injected-1234"},
	}
	sent := 0
	for _, rt := range routes {
		for _, h := range headerSets {
			c := hostileCase{method: "POST", target: rt.target, headers: "Host: {GW}\r\n" + strings.ReplaceAll(h, "{K}", hostileKey)}
			if a := rawDo(gwAddr, c.bytes(gwAddr)); a.status != 200 {
				t.Errorf("%s with %q: %d %v, want 200", rt.target, h, a.status, a.err)
			}
			sent++
		}
	}
	reqs := e.up.Requests()
	if len(reqs) != sent {
		t.Fatalf("upstream got %d requests, want %d", len(reqs), sent)
	}
	for i, r := range reqs {
		rt := routes[i/len(headerSets)]
		if got := r.Header.Values(rt.wantHeader); len(got) != 1 || got[0] != rt.wantValue {
			t.Errorf("%s: upstream %s %q, want only the injected key", r.Path, rt.wantHeader, got)
		}
		for k, vs := range r.Header {
			for _, v := range vs {
				if strings.Contains(v, hostileKey) {
					t.Errorf("%s with %q: the client's key reached upstream in %s", r.Path, headerSets[i%len(headerSets)], k)
				}
			}
		}
	}
}

// randomToken is a random token of 1 to 64 random bytes, hex-encoded.
func randomToken() string {
	b := make([]byte, 1+rand.Text()[0]%64)
	rand.Read(b)
	return "sk-" + hex.EncodeToString(b)
}

func TestBadTokensNeverReachUpstream(t *testing.T) {
	const good = "sk-good-token-5f3a9c"
	e := newEnv(t, "200", func(c *config.Config) { c.Auth.Keys = []string{good} })
	tokens := []string{good[:len(good)-1] + "d", good[:len(good)-1], good + "c", strings.ToUpper(good), "sha256:" + sha256Hex(good)}
	for range 500 {
		tokens = append(tokens, randomToken())
	}
	places := []func(*http.Request, string){
		func(r *http.Request, tok string) { r.Header.Set("Authorization", "Bearer "+tok) },
		func(r *http.Request, tok string) { r.Header.Set("X-Api-Key", tok) },
		func(r *http.Request, tok string) { r.Header.Set("Sluice-Key", tok) },
	}
	client := sdkHTTPClient(t)
	for i, tok := range tokens {
		for _, path := range []string{"/openai/v1/chat/completions", "/anthropic/v1/messages"} {
			req, _ := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(chatBody))
			places[i%len(places)](req, tok)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b := body(t, resp)
			if resp.StatusCode != 401 || !strings.Contains(b, "unauthorized") {
				t.Fatalf("token %q at %s: %d %s, want 401 unauthorized", tok, path, resp.StatusCode, b)
			}
		}
	}
	if n := e.up.Calls(); n != 0 {
		t.Fatalf("upstream calls %d after %d bad tokens, want 0", n, 2*len(tokens))
	}
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Sluice-Key", good)
	if body(t, resp); resp.StatusCode != 200 || e.up.Calls() != 1 {
		t.Errorf("the good token: status %d, upstream calls %d; want 200, 1", resp.StatusCode, e.up.Calls())
	}
}

// captureSlog sends the default slog logger, which the gateway takes when
// Options.Logger is nil, to a buffer until the test ends.
// SetDefault also points the log package at the new handler, so its
// output and flags are put back too.
func captureSlog(t *testing.T) *syncBuffer {
	buf := &syncBuffer{}
	prev, prevOut, prevFlags := slog.Default(), log.Writer(), log.Flags()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() {
		slog.SetDefault(prev)
		log.SetOutput(prevOut)
		log.SetFlags(prevFlags)
	})
	return buf
}

// secretCall is one failing call of TestSecretsInNoLogErrorOrMetric and
// what the gateway answered.
type secretCall struct {
	script, path, body, keyHeader, keyValue string
	answer                                  string
	status                                  int
}

func (c *secretCall) do(t *testing.T, client *http.Client, base string) {
	req, _ := http.NewRequest("POST", base+c.path, strings.NewReader(c.body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(c.keyHeader, c.keyValue)
	req.Header.Set("Sluice-Fake-Script", c.script)
	resp, err := client.Do(req)
	if err != nil {
		t.Errorf("script %s at %s: %v", c.script, c.path, err)
		return
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body) // a cut body ends in an error: what came is judged
	c.status = resp.StatusCode
	c.answer = fmt.Sprintf("%d %v %s", resp.StatusCode, resp.Header, b)
}

func TestSecretsInNoLogErrorOrMetric(t *testing.T) {
	const secret = "sk-live-SECRET-e4d2b7a19c0f"
	slogBuf := captureSlog(t)
	e := newEnv(t, "200", nil)
	var calls []*secretCall
	for _, script := range []string{"hang", "503", "stream:cut-after=2", "401", "stream:stall-after=2", "reset", "429:insufficient_quota"} {
		for _, c := range []secretCall{
			{path: "/openai/v1/chat/completions", body: chatBody, keyHeader: "Authorization", keyValue: "Bearer " + secret},
			{path: "/openai/v1/chat/completions", body: chatStream, keyHeader: "Authorization", keyValue: "Bearer " + secret},
			{path: "/anthropic/v1/messages", body: msgStream, keyHeader: "X-Api-Key", keyValue: secret},
		} {
			c.script = script
			calls = append(calls, &c)
		}
	}
	client := sdkHTTPClient(t)
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() { c.do(t, client, e.srv.URL) })
	}
	wg.Wait()
	var answers strings.Builder
	for _, c := range calls {
		answers.WriteString(c.answer + "\n")
		if c.status < 400 && !strings.HasPrefix(c.script, "stream") {
			t.Errorf("script %s at %s: status %d, want a failure", c.script, c.path, c.status)
		}
	}
	for _, r := range e.up.Requests() {
		if !strings.Contains(r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"), secret) {
			t.Fatalf("the key was not passed through to the provider (%s), so the test shows nothing", r.Path)
		}
	}
	metrics := body(t, e.do("GET", "/metrics", ""))
	breakers := body(t, e.do("GET", "/sluice/breakers", ""))
	for _, where := range []struct{ name, text string }{
		{"a gateway answer", answers.String()},
		{"the attempt log", e.logs.String()},
		{"the gateway's own log", slogBuf.String()},
		{"GET /metrics", metrics},
		{"GET /sluice/breakers", breakers},
	} {
		for _, part := range []string{secret, secret[len(secret)-8:]} {
			if i := strings.Index(where.text, part); i >= 0 {
				t.Errorf("%s holds the key's text %q: …%s…", where.name, part, where.text[max(0, i-80):min(len(where.text), i+40)])
			}
		}
	}
	if e.up.Calls() < len(calls) || !strings.Contains(metrics, "sluice_attempts_total") || len(e.logLines()) < len(calls) {
		t.Errorf("upstream calls %d, log lines %d for %d calls: the test shows nothing", e.up.Calls(), len(e.logLines()), len(calls))
	}
}
