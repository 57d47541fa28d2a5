package sluice

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/auth"
	"google.golang.org/genai"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/googleauth"
	"github.com/sluice-llm/sluice/fake"
)

// Vertex AI through the engine: the fake's Vertex AI and token endpoint,
// googleauth's Signer of the fake's service-account file.

const (
	vxGeminiPath    = "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent"
	vxGeminiSSEPath = "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent"
	vxClaudePath    = "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict"
	vxClaudeSSEPath = "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict"
	vxGenBody       = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	vxMsgBody       = `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	vxMsgStreamBody = `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
)

// isolateGoogleEnv keeps Google's libraries away from the machine's
// credentials, gcloud's files and the metadata server.
func isolateGoogleEnv(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	for k, v := range map[string]string{
		"HOME": dir, "CLOUDSDK_CONFIG": dir, "GOOGLE_APPLICATION_CREDENTIALS": "", "NO_GCE_CHECK": "True",
		"GCE_METADATA_HOST": "127.0.0.1:1", "GCE_METADATA_IP": "127.0.0.1:1", "GOOGLE_CLOUD_PROJECT": "",
		"GOOGLE_CLOUD_LOCATION": "", "GOOGLE_API_KEY": "", "GEMINI_API_KEY": "", "GOOGLE_GENAI_USE_VERTEXAI": "",
	} {
		t.Setenv(k, v)
	}
}

// tokenCounter counts the token requests of a Signer, each sent after
// delay: a slow token endpoint, so that concurrent calls find the first
// request under way.
type tokenCounter struct {
	n     atomic.Int32
	delay time.Duration
	base  http.RoundTripper // http.DefaultTransport if nil
}

func (c *tokenCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	time.Sleep(c.delay)
	if c.base != nil {
		return c.base.RoundTrip(r)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// vertexRig is a Transport speaking Vertex AI to a fake, signing with a
// Signer of the fake's service-account file.
type vertexRig struct {
	t      *testing.T
	srv    *fake.Server
	tr     *Transport
	tokens *tokenCounter // the Signer's token requests
}

func newVertexRig(t *testing.T, lifetime time.Duration) *vertexRig {
	t.Helper()
	isolateGoogleEnv(t)
	srv := fake.NewServer("200")
	srv.TokenLifetime = lifetime
	t.Cleanup(srv.Close)
	path, err := srv.WriteServiceAccount(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	r := &vertexRig{t: t, srv: srv, tokens: &tokenCounter{delay: 100 * time.Millisecond}}
	s, err := googleauth.New(dialect.SignerOptions{Client: &http.Client{Transport: r.tokens}})
	if err != nil {
		t.Fatal(err)
	}
	r.tr = &Transport{Policy: fastPolicy(), Provider: "vertex-test", Dialect: dialect.Vertex, Signer: s}
	t.Cleanup(r.tr.CloseIdleConnections)
	return r
}

// newVertexRigInProcess is newVertexRig with the fake served in process,
// its token endpoint too (see inProcess), for a test in a synctest bubble;
// call isolateGoogleEnv first, outside the bubble.
func newVertexRigInProcess(t *testing.T, lifetime time.Duration) *vertexRig {
	t.Helper()
	prov := &fake.Provider{Script: "200", TokenLifetime: lifetime}
	t.Cleanup(prov.Close)
	srv := &fake.Server{Server: &httptest.Server{URL: inProcessURL}, Provider: prov}
	path, err := srv.WriteServiceAccount(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &vertexRig{t: t, srv: srv, tokens: &tokenCounter{delay: 100 * time.Millisecond, base: inProcess{prov}}}
	s, err := googleauth.New(dialect.SignerOptions{CredentialsFile: path, Client: &http.Client{Transport: r.tokens}})
	if err != nil {
		t.Fatal(err)
	}
	r.tr = &Transport{Base: inProcess{prov}, Policy: fastPolicy(), Provider: "vertex-test", Dialect: dialect.Vertex, Signer: s}
	return r
}

// call sends body to path with script, the client's own bearer token in
// Authorization.
func (r *vertexRig) call(path, script, body string) (*http.Response, error) {
	req, err := http.NewRequest("POST", r.srv.URL+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer client-token")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(fake.ScriptHeader, script)
	return r.tr.RoundTrip(req)
}

// ok sends a call that must be answered 200 and read whole; it returns
// the body.
func (r *vertexRig) ok(path, script, body string) string {
	r.t.Helper()
	resp, err := r.call(path, script, body)
	if err != nil {
		r.t.Fatalf("%s: %v", path, err)
	}
	b := readAll(r.t, resp)
	if resp.StatusCode != 200 {
		r.t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
	}
	return b
}

// TestVertexOneTokenManyCalls: 100 calls on both publishers, the first
// 40 concurrent before any token is had, then 10 in turn, then 50
// concurrent, are signed with one token, fetched once.
func TestVertexOneTokenManyCalls(t *testing.T) {
	r := newVertexRig(t, 0)
	// 50 calls at once under the race detector on a busy machine: phases
	// that only a hung call outlasts, since what is counted is the token.
	r.tr.Policy.Timeout = Timeouts{Connect: 10 * time.Second, FirstByte: 10 * time.Second, Idle: 10 * time.Second, Total: 30 * time.Second}
	paths := [][2]string{{vxGeminiPath, vxGenBody}, {vxClaudePath, vxMsgBody}, {vxGeminiSSEPath, vxGenBody}, {vxClaudeSSEPath, vxMsgStreamBody}}
	together := func(n int) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				p := paths[i%4]
				resp, err := r.call(p[0], "200", p[1])
				if err != nil {
					t.Error(err)
					return
				}
				if b := readAll(t, resp); resp.StatusCode != 200 {
					t.Errorf("%s: %d %s", p[0], resp.StatusCode, b)
				}
			})
		}
		wg.Wait()
	}
	together(40)
	for i := range 10 {
		r.ok(paths[i%4][0], "200", paths[i%4][1])
	}
	together(50)
	if r.srv.TokensIssued() != 1 || r.tokens.n.Load() != 1 || r.srv.Calls() != 100 || r.srv.Unauthorized() != 0 {
		t.Errorf("%d tokens issued (%d requested) for %d calls, %d refused; want 1 (1), 100, 0",
			r.srv.TokensIssued(), r.tokens.n.Load(), r.srv.Calls(), r.srv.Unauthorized())
	}
	seen := map[string]bool{}
	for _, q := range r.srv.Requests() {
		seen[q.Header.Get("Authorization")] = true
	}
	if len(seen) != 1 || seen["Bearer client-token"] {
		t.Errorf("the upstream saw %v; want the one token of the gateway", seen)
	}
}

// TestVertexTokenRefreshedEarly: tokens that live 3 s are refreshed half
// way through their life while the old one serves: over 4 s of calls, one
// each 50 ms, the signer asks at 0, 1.6 and 3.2 s, each fetch taking
// 100 ms, and the fake refuses none (it refuses an expired token).
func TestVertexTokenRefreshedEarly(t *testing.T) {
	isolateGoogleEnv(t)
	synctest.Test(t, func(t *testing.T) {
		r := newVertexRigInProcess(t, 3*time.Second)
		end := time.Now().Add(4 * time.Second)
		calls := 0
		var issued []time.Duration // when each new token was first seen, by a call
		start, seen := time.Now(), 0
		for ; time.Now().Before(end); calls++ {
			r.ok(vxGeminiPath, "200", vxGenBody)
			synctest.Wait() // a fetch that ends now ends before the count
			if n := r.srv.TokensIssued(); n != seen {
				seen = n
				issued = append(issued, time.Since(start))
			}
			time.Sleep(50 * time.Millisecond)
		}
		want := []time.Duration{100 * time.Millisecond, 1700 * time.Millisecond, 3300 * time.Millisecond}
		if !slices.Equal(issued, want) || r.srv.Unauthorized() != 0 || r.srv.Calls() != calls {
			t.Errorf("tokens issued at %v for %d calls over 4 s, %d refused; want at %v, none refused", issued, calls, r.srv.Unauthorized(), want)
		}
	})
}

// TestVertexTokenEndpointDown: with the token endpoint failing, calls
// fail with a *CredentialsError naming its status and reach no model: 50
// concurrent calls share one token request, and the calls that follow
// within a second get its error without asking again; once the endpoint
// is back, calls pass.
func TestVertexTokenEndpointDown(t *testing.T) {
	isolateGoogleEnv(t)
	synctest.Test(t, func(t *testing.T) {
		r := newVertexRigInProcess(t, 0)
		r.srv.FailTokens(500)
		var wg sync.WaitGroup
		var failed atomic.Int32
		for i := range 50 {
			wg.Go(func() {
				path, body := vxGeminiSSEPath, vxGenBody
				if i%2 == 1 {
					path, body = vxClaudePath, vxMsgBody
				}
				if _, err := r.call(path, "200", body); errors.As(err, new(*CredentialsError)) {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		failedAt := time.Now()
		fails := func(when string) {
			t.Helper()
			resp, err := r.call(vxGeminiPath, "200", vxGenBody)
			var ce *CredentialsError
			if resp != nil || !errors.As(err, &ce) || !strings.Contains(err.Error(), "500") {
				t.Fatalf("%s: %v, %v; want a *CredentialsError naming the endpoint's 500", when, resp, err)
			}
		}
		for range 5 {
			fails("at once")
		}
		if failed.Load() != 50 || r.tokens.n.Load() != 1 || r.srv.Calls() != 0 || r.srv.TokensIssued() != 0 {
			t.Fatalf("%d of 50 failed with a *CredentialsError; %d token requests for 55 calls, %d model calls; want 50, 1, none",
				failed.Load(), r.tokens.n.Load(), r.srv.Calls())
		}
		r.srv.FailTokens(0)
		time.Sleep(time.Second - time.Nanosecond)
		fails("back, a nanosecond before a second since the failure")
		if n := r.tokens.n.Load(); n != 1 {
			t.Fatalf("%d token requests within a second of the failure, want 1", n)
		}
		time.Sleep(time.Nanosecond)
		if d := time.Since(failedAt); d != time.Second {
			t.Fatalf("the clock moved %v, want 1s", d)
		}
		resp, err := r.call(vxGeminiPath, "200", vxGenBody)
		if err != nil {
			t.Fatalf("the endpoint is back, a second after the failure the call still fails: %v", err)
		}
		readAll(t, resp)
		if r.srv.TokensIssued() != 1 || r.srv.Calls() != 1 || r.tokens.n.Load() != 2 {
			t.Errorf("%d tokens (%d requests), %d calls once back; want 1 (2) and 1", r.srv.TokensIssued(), r.tokens.n.Load(), r.srv.Calls())
		}
	})
}

// TestVertexAnswersWhole: each publisher's answer and stream come back
// whole, the model read from the path.
func TestVertexAnswersWhole(t *testing.T) {
	r := newVertexRig(t, 0)
	var g struct {
		Candidates []struct {
			Content struct {
				Parts []struct{ Text string }
			}
			FinishReason string
		}
		ModelVersion string
	}
	if err := json.Unmarshal([]byte(r.ok(vxGeminiPath, "200", vxGenBody)), &g); err != nil || len(g.Candidates) != 1 ||
		g.Candidates[0].Content.Parts[0].Text != "This is a fake answer." || g.Candidates[0].FinishReason != "STOP" {
		t.Errorf("generateContent: %+v, %v", g, err)
	}
	s := r.ok(vxGeminiSSEPath, "stream:events=4", vxGenBody)
	if n := strings.Count(s, "data: "); n != 4 || !strings.Contains(s, `"finishReason":"STOP"`) {
		t.Errorf("streamGenerateContent: %d events: %s", n, s)
	}
	var m struct {
		Model   string
		Content []struct{ Text string }
	}
	if err := json.Unmarshal([]byte(r.ok(vxClaudePath, "200", vxMsgBody)), &m); err != nil ||
		m.Model != "claude-haiku-4-5@20251001" || m.Content[0].Text != "This is a fake answer." {
		t.Errorf("rawPredict: %+v, %v", m, err)
	}
	s = r.ok(vxClaudeSSEPath, "stream:events=3", vxMsgStreamBody)
	if !strings.Contains(s, "event: message_start") || !strings.HasSuffix(s, "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n") ||
		strings.Count(s, "event: content_block_delta") != 3 {
		t.Errorf("streamRawPredict: %s", s)
	}
	if r.srv.Calls() != 4 || r.srv.TokensIssued() != 1 {
		t.Errorf("%d calls, %d tokens; want 4 and 1", r.srv.Calls(), r.srv.TokensIssued())
	}
}

// TestVertexStreamCut: a stream the fake cuts is an error to its reader,
// for both publishers.
func TestVertexStreamCut(t *testing.T) {
	r := newVertexRig(t, 0)
	for _, p := range [][2]string{{vxGeminiSSEPath, vxGenBody}, {vxClaudeSSEPath, vxMsgStreamBody}} {
		resp, err := r.call(p[0], "stream:events=5;cut-after=2", p[1])
		if err != nil {
			t.Fatalf("%s: %v", p[0], err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !errors.Is(err, ErrStreamCut) || len(b) == 0 {
			t.Errorf("%s: read %d bytes, %v; want some, then ErrStreamCut", p[0], len(b), err)
		}
	}
}

// TestVertexStreamEnds: a stream whose bytes end cleanly is whole only if
// it ended on its publisher's terminal event: a Gemini chunk with a
// finishReason, Anthropic's message_stop.
func TestVertexStreamEnds(t *testing.T) {
	const (
		chunk = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]}}]}\n\n"
		last  = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\".\"}]},\"finishReason\":\"STOP\"}]}\n\n"
		start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		delta = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"Hi\"}}\n\n"
		stop  = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
	)
	var stream atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, stream.Load().(string))
	}))
	defer srv.Close()
	tr := &Transport{Policy: fastPolicy(), Dialect: dialect.Vertex}
	defer tr.CloseIdleConnections()
	for _, tt := range []struct {
		path, stream string
		whole        bool
	}{
		{vxGeminiSSEPath, chunk + chunk + last, true},
		{vxGeminiSSEPath, chunk + chunk, false},
		{vxClaudeSSEPath, start + delta + stop, true},
		{vxClaudeSSEPath, start + delta, false},
	} {
		stream.Store(tt.stream)
		req, _ := http.NewRequest("POST", srv.URL+tt.path, strings.NewReader(vxGenBody))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != tt.stream || (err == nil) != tt.whole || (!tt.whole && !errors.Is(err, io.ErrUnexpectedEOF)) {
			t.Errorf("%s %q: read %d bytes, %v; want all, whole %v", tt.path, tt.stream, len(b), err, tt.whole)
		}
	}
}

// TestVertexRetries: a 503, and a stream whose first event is an
// overload (Google's UNAVAILABLE, Anthropic's overloaded_error), are
// retried on the same token.
func TestVertexRetries(t *testing.T) {
	r := newVertexRig(t, 0)
	for _, tt := range [][3]string{
		{vxGeminiPath, "503,200", vxGenBody},
		{vxClaudePath, "503,200", vxMsgBody},
		{vxGeminiSSEPath, "overloaded,200", vxGenBody},
		{vxClaudeSSEPath, "overloaded,200", vxMsgStreamBody},
	} {
		r.srv.Reset()
		b := r.ok(tt[0], tt[1], tt[2])
		if r.srv.Calls() != 2 || strings.Contains(b, "error") {
			t.Errorf("%s %s: %d calls, %s; want 2 and the answer", tt[0], tt[1], r.srv.Calls(), b)
		}
	}
	if r.tokens.n.Load() != 1 || r.srv.Unauthorized() != 0 {
		t.Errorf("%d token requests, %d refused; want 1 for all, none refused", r.tokens.n.Load(), r.srv.Unauthorized())
	}
}

// TestVertexFallbackModel: a fallback's model goes in the path, the body
// sent as it came.
func TestVertexFallbackModel(t *testing.T) {
	r := newVertexRig(t, 0)
	for _, tt := range []struct{ path, body, model, want string }{
		{vxGeminiPath, vxGenBody, "gemini-2.5-flash",
			"/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"},
		{vxClaudeSSEPath, vxMsgStreamBody, "claude-sonnet-4-5@20250929",
			"/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"},
	} {
		r.srv.Reset()
		r.tr.Fallbacks = []Target{{Model: tt.model}}
		r.ok(tt.path, "503,503,503,200", tt.body)
		reqs := r.srv.Requests()
		if len(reqs) != 4 || reqs[2].Path != tt.path || reqs[3].Path != tt.want || string(reqs[3].Body) != tt.body {
			t.Errorf("%s: requests %d, the last %+v; want 4, the last to %s with the body as it came", tt.path, len(reqs), reqs[len(reqs)-1], tt.want)
		}
	}
}

// staticToken is a client's own credentials: one bearer token.
type staticToken string

func (s staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(s), Type: "Bearer"}, nil
}

// TestVertexGenAIClient: google.golang.org/genai's client on its Vertex AI
// backend, pointed at a gateway that forwards through a Transport, gets
// an answer and a whole stream; the upstream sees the gateway's token,
// never the client's.
func TestVertexGenAIClient(t *testing.T) {
	r := newVertexRig(t, 0)
	vc := dialect.Vertex.Client()
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, in *http.Request) {
		if vc.Key(in) != "client-token" {
			http.Error(w, "no client token", http.StatusUnauthorized)
			return
		}
		out := in.Clone(in.Context())
		out.RequestURI, out.Host = "", ""
		out.URL.Scheme, out.URL.Host = "http", strings.TrimPrefix(r.srv.URL, "http://")
		vc.SetKey(out, "")
		resp, err := r.tr.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	defer gw.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{
		Backend: genai.BackendVertexAI, Project: "p1", Location: "us-central1",
		Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken("client-token")}),
		HTTPOptions: genai.HTTPOptions{BaseURL: gw.URL},
	})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Models.GenerateContent(ctx, "gemini-2.0-flash", genai.Text("hi"), nil)
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if resp.Text() != "This is a fake answer." || resp.UsageMetadata == nil || resp.UsageMetadata.CandidatesTokenCount != 5 {
		t.Errorf("answer %q, usage %+v", resp.Text(), resp.UsageMetadata)
	}
	var text strings.Builder
	var last *genai.GenerateContentResponse
	for chunk, err := range c.Models.GenerateContentStream(ctx, "gemini-2.0-flash", genai.Text("hi"), nil) {
		if err != nil {
			t.Fatalf("GenerateContentStream: %v", err)
		}
		text.WriteString(chunk.Text())
		last = chunk
	}
	if text.String() != "This is a fake answer." || last == nil || last.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Errorf("stream %q, last %+v", text.String(), last)
	}
	reqs := r.srv.Requests()
	if len(reqs) != 2 || r.srv.TokensIssued() != 1 || r.srv.Unauthorized() != 0 ||
		reqs[1].Path != "/v1beta1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent" {
		t.Fatalf("%d requests, %d tokens, %d refused: %+v", len(reqs), r.srv.TokensIssued(), r.srv.Unauthorized(), reqs)
	}
	for _, q := range reqs {
		if a := q.Header.Get("Authorization"); a == "" || a == "Bearer client-token" {
			t.Errorf("the upstream saw Authorization %q; want the gateway's token", a)
		}
	}
}
