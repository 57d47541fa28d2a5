package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/nodetest"
)

// bedrockNodeDir holds the Node script that drives the AWS SDK for
// JavaScript's Bedrock Runtime client, with its package.json and
// package-lock.json; "npm ci --prefix" it (as .ci/run does) to install
// the pinned SDK.
const bedrockNodeDir = "testdata/bedrock-node"

// h2cServer serves e's gateway as a server of the gateway does
// (Protocols), counting its connections, and records the protocol of
// each request it gets.
type h2cServer struct {
	*httptest.Server
	conns  atomic.Int32
	mu     sync.Mutex
	protos []string
}

func newH2CServer(t *testing.T, e *env) *h2cServer {
	s := &h2cServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.protos = append(s.protos, r.Proto)
		s.mu.Unlock()
		e.gw.ServeHTTP(w, r)
	}))
	s.Config.Protocols = Protocols()
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(func() {
		s.CloseClientConnections()
		s.Close()
	})
	return s
}

func (s *h2cServer) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.protos...)
}

// h2cClient speaks HTTP/2 with prior knowledge only.
func h2cClient(t *testing.T) *http.Client {
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// TestH2CStream: over HTTP/2 with prior knowledge a streamed call is
// relayed whole and flushed event by event (the first event arrives while
// the provider still holds the rest), a stream the provider cuts ends
// with the gateway's error event, and a client that resets its stream
// mid-way ends the upstream call; HTTP/1.1 still works on the same port.
func TestH2CStream(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		p := fastPolicy("interactive") // a stall outlasts the test's reads
		p.Timeout = sluice.Timeouts{Connect: time.Second, FirstByte: 5 * time.Second, Idle: 10 * time.Second, Total: 30 * time.Second}
		p.Breaker.Lease = p.Timeout.Total
		c.Policies["interactive"] = p
	})
	s := newH2CServer(t, e)
	c := h2cClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	post := func(ctx context.Context, script string) *http.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/openai/v1/chat/completions", strings.NewReader(chatStream))
		req.Header.Set("Authorization", "Bearer "+clientKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(fake.ScriptHeader, script)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 2 || resp.StatusCode != 200 {
			t.Fatalf("%s %d; want HTTP/2.0 200", resp.Proto, resp.StatusCode)
		}
		return resp
	}

	resp := post(ctx, "200")
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "data: [DONE]") || resp.Header.Get("Connection") != "" {
		t.Errorf("stream over h2c: %q, Connection %q", b, resp.Header.Get("Connection"))
	}

	// Flushed at once: the first event comes while the provider stalls,
	// well before the idle limit would end the stream.
	start := time.Now()
	resp = post(ctx, "stream:stall-after=1")
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	resp.Body.Close()
	if err != nil || !strings.HasPrefix(first, "data: ") || time.Since(start) > 5*time.Second {
		t.Errorf("first event over h2c while the provider stalls: %q, %v after %v", first, err, time.Since(start))
	}

	resp = post(ctx, "stream:cut-after=2")
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "stream_cut") {
		t.Errorf("cut stream over h2c: %q; want the gateway's stream_cut event", b)
	}

	// The client resets its stream (as closing the stalled one above did):
	// the gateway ends the upstream call, long before the idle limit.
	waitIdle(t, e)
	cctx, ccancel := context.WithCancel(ctx)
	resp = post(cctx, "stream:stall-after=1")
	bufio.NewReader(resp.Body).ReadString('\n')
	ccancel()
	resp.Body.Close()
	waitIdle(t, e)

	r1 := e.do("POST", "/openai/v1/chat/completions", chatBody) // HTTP/1.1, on e's own server
	r1.Body.Close()
	req, _ := http.NewRequest("POST", s.URL+"/openai/v1/chat/completions", strings.NewReader(chatBody))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	r1, err = http.DefaultClient.Do(req)
	if err != nil || r1.ProtoMajor != 1 || r1.StatusCode != 200 {
		t.Fatalf("HTTP/1.1 on the h2c port: %v %v", r1, err)
	}
	r1.Body.Close()
}

// waitIdle waits for the gateway to have no call in flight, at most 5s:
// half the idle limit of TestH2CStream's stalls.
func waitIdle(t *testing.T, e *env) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); e.gw.InFlight() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d calls in flight 5s after the client reset its stream; want none", e.gw.InFlight())
		}
	}
}

// TestH2CBodyTooLargeKeepsConnection: a body over the limit sent over
// h2c gets 413 without closing the connection the client's other calls
// share (HTTP/1's Connection: close would make Go's HTTP/2 server send
// GOAWAY): the next call goes on the same connection.
func TestH2CBodyTooLargeKeepsConnection(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) { c.Limits.MaxBodyBytes = 1 << 10 })
	s := newH2CServer(t, e)
	c := h2cClient(t)
	for i, body := range []string{`{"model":"m","x":"` + strings.Repeat("a", 4<<10) + `"}`, chatBody} {
		req, _ := http.NewRequest("POST", s.URL+"/openai/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+clientKey)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if want := []int{413, 200}[i]; resp.StatusCode != want || resp.ProtoMajor != 2 {
			t.Fatalf("call %d: %s %d; want HTTP/2.0 %d", i+1, resp.Proto, resp.StatusCode, want)
		}
		time.Sleep(50 * time.Millisecond) // a GOAWAY, had one been sent, is read by now
	}
	if n := s.conns.Load(); n != 1 {
		t.Errorf("%d connections for two calls; want 1", n)
	}
}

// TestBedrockNodeSDKDefaultHandler runs the AWS SDK for JavaScript's
// Bedrock Runtime client, with its default request handler (HTTP/2),
// against the gateway with the fake provider behind it: Converse,
// ConverseStream, and ConverseStream with a model ARN, all over h2c. It
// skips when node or the installed SDK is missing.
func TestBedrockNodeSDKDefaultHandler(t *testing.T) {
	e := newEnv(t, "200", withBedrock(t))
	s := newH2CServer(t, e)
	arn := bedrockARNs[1]
	out := nodetest.Run(t, bedrockNodeDir, "check.mjs",
		bedrockNodeDir+"/node_modules/@aws-sdk/client-bedrock-runtime/package.json",
		"npm ci --prefix internal/gateway/"+bedrockNodeDir,
		"GATEWAY_URL="+s.URL+"/bedrock", "CLIENT_KEY="+bedrockClientKey, "AWS_REGION="+fake.DefaultAWS.Region,
		"MODEL_ID="+bedrockModel, "MODEL_ARN="+arn, "AWS_PROFILE=", "AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=")
	type answer struct {
		Text         string
		OutputTokens int
	}
	var got struct{ Plain, Stream, ARNStream answer }
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("script output %q: %v", out, err)
	}
	want := answer{"This is a fake answer.", 5}
	if got.Plain != want || got.Stream != want || got.ARNStream != want {
		t.Errorf("the SDK read %+v; want each answer %+v", got, want)
	}
	if p := s.seen(); len(p) != 3 || p[0] != "HTTP/2.0" || p[1] != "HTTP/2.0" || p[2] != "HTTP/2.0" {
		t.Errorf("the SDK's requests came as %q; want three HTTP/2.0", p)
	}
	reqs := e.up.Requests()
	if len(reqs) != 3 || !strings.Contains(reqs[2].Path, "/model/"+arn+"/converse-stream") {
		t.Fatalf("upstream calls %d (%v); want 3, the last to the ARN", len(reqs), reqs)
	}
}
