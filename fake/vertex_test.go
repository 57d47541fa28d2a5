package fake

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/genai"
)

const (
	vertexGemini    = "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent"
	vertexGeminiSSE = "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent?alt=sse"
	vertexClaude    = "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict"
	vertexClaudeSSE = "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict"
	vertexBody      = `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	cloudPlatform   = "https://www.googleapis.com/auth/cloud-platform"
)

// isolateGoogle keeps Google's libraries away from the machine's
// credentials, gcloud's files and the metadata server.
func isolateGoogle(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("CLOUDSDK_CONFIG", dir)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1")
	t.Setenv("NO_GCE_CHECK", "True")
	for _, k := range []string{"GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_CLOUD_REGION",
		"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"} {
		t.Setenv(k, "")
	}
}

// tokenSource is oauth2/google's token source of a service-account file
// for s, and the file's path.
func tokenSource(t *testing.T, s *Server) (oauth2.TokenSource, string) {
	t.Helper()
	isolateGoogle(t)
	path, err := s.WriteServiceAccount(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return sourceOf(t, path), path
}

func sourceOf(t *testing.T, path string) oauth2.TokenSource {
	t.Helper()
	return sourceIn(t, context.Background(), path)
}

// sourceIn is sourceOf with ctx, which may carry the oauth2.HTTPClient the
// token requests go through.
func sourceIn(t *testing.T, ctx context.Context, path string) oauth2.TokenSource {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	creds, err := google.CredentialsFromJSONWithTypeAndParams(ctx, b, google.ServiceAccount,
		google.CredentialsParams{Scopes: []string{cloudPlatform}})
	if err != nil {
		t.Fatal(err)
	}
	return creds.TokenSource
}

// postWith sends body to path on s through client, the script in its
// header.
func postWith(t *testing.T, c *http.Client, s *Server, path, script, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ScriptHeader, script)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestVertexOneTokenFor100Calls: oauth2/google's token source of the
// written service-account file gets one token from the fake's token
// endpoint and uses it for 100 calls, concurrent, on both publishers.
func TestVertexOneTokenFor100Calls(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	ts, _ := tokenSource(t, s)
	c := oauth2.NewClient(context.Background(), ts)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			path, body := vertexGemini, geminiBody
			if i%2 == 1 {
				path, body = vertexClaude, vertexBody
			}
			resp := postWith(t, c, s, path, "200", body)
			if b := readAll(t, resp); resp.StatusCode != 200 {
				t.Errorf("%s: %d %s", path, resp.StatusCode, b)
			}
		})
	}
	wg.Wait()
	if s.TokensIssued() != 1 || s.Calls() != 100 || s.Unauthorized() != 0 {
		t.Errorf("tokens %d, calls %d, unauthorized %d; want 1, 100, 0", s.TokensIssued(), s.Calls(), s.Unauthorized())
	}
}

// inProcess is a client whose calls h serves in the calling goroutine,
// with no socket: a test in a synctest bubble runs the whole exchange on
// its fake clock.
func inProcess(h http.Handler) *http.Client {
	return &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		sr := r.Clone(r.Context())
		sr.RequestURI, sr.RemoteAddr = r.URL.RequestURI(), "127.0.0.1:1"
		if sr.Body == nil {
			sr.Body = http.NoBody
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, sr)
		resp := rec.Result()
		resp.Request = r
		return resp, nil
	})}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestVertexTokenRefresh: a token that expires soon is fetched again:
// oauth2 takes a token for expired 10 s before its expires_in, so one of
// 11 s is kept for exactly 1 s, then refreshed.
func TestVertexTokenRefresh(t *testing.T) {
	isolateGoogle(t)
	synctest.Test(t, func(t *testing.T) {
		p := &Provider{Script: "200", TokenLifetime: 11 * time.Second}
		defer p.Close()
		const base = "http://vertex.test"
		a, err := p.NewServiceAccount(base + TokenPath)
		if err != nil {
			t.Fatal(err)
		}
		path := t.TempDir() + "/service-account.json"
		if err := a.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		c := inProcess(p)
		ts := sourceIn(t, context.WithValue(context.Background(), oauth2.HTTPClient, c), path)
		first, err := ts.Token()
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		if again, _ := ts.Token(); again.AccessToken != first.AccessToken || p.TokensIssued() != 1 {
			t.Fatalf("a token 1 s from being taken for expired was fetched again: %d issued", p.TokensIssued())
		}
		time.Sleep(time.Nanosecond)
		second, err := ts.Token()
		if err != nil || second.AccessToken == first.AccessToken || p.TokensIssued() != 2 {
			t.Errorf("%v: %d issued; want a second token", err, p.TokensIssued())
		}
		req, _ := http.NewRequest(http.MethodPost, base+vertexGemini, strings.NewReader(geminiBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(ScriptHeader, "200")
		second.SetAuthHeader(req)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if b := readAll(t, resp); resp.StatusCode != 200 {
			t.Errorf("with the new token: %d %s", resp.StatusCode, b)
		}
	})
}

// TestVertexRefusesBadTokens: no token, a token the endpoint never
// issued and an expired one are each a 401 in Google's shape that plays
// no step.
func TestVertexRefusesBadTokens(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	ts, _ := tokenSource(t, s)
	tok, err := ts.Token()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	now := time.Now()
	s.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	bearer := func(v string) *http.Client {
		return oauth2.NewClient(context.Background(), oauth2.StaticTokenSource(&oauth2.Token{AccessToken: v}))
	}
	resp := postWith(t, bearer(tok.AccessToken), s, vertexClaude, "200", vertexBody)
	if b := readAll(t, resp); resp.StatusCode != 200 {
		t.Fatalf("a good token: %d %s", resp.StatusCode, b)
	}
	mu.Lock()
	now = now.Add(time.Hour + time.Second)
	mu.Unlock()
	for name, c := range map[string]*http.Client{
		"none": http.DefaultClient, "unknown": bearer("ya29.made-up"), "expired": bearer(tok.AccessToken),
	} {
		resp := postWith(t, c, s, vertexGemini, "200", geminiBody)
		var e geminiErr
		decode(t, readAll(t, resp), &e)
		if resp.StatusCode != 401 || e.Error.Status != "UNAUTHENTICATED" || e.Error.Code != 401 ||
			!strings.Contains(resp.Header.Get("WWW-Authenticate"), "invalid_token") {
			t.Errorf("%s: %d %+v", name, resp.StatusCode, e)
		}
	}
	if s.Calls() != 1 || s.Unauthorized() != 3 {
		t.Errorf("calls %d, unauthorized %d; want 1 and 3", s.Calls(), s.Unauthorized())
	}
}

// TestTokenEndpointDown: with FailTokens the token source fails with the
// endpoint's status and no token; FailTokens(0) brings it back.
func TestTokenEndpointDown(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	ts, _ := tokenSource(t, s)
	s.FailTokens(http.StatusServiceUnavailable)
	_, err := ts.Token()
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) || re.Response.StatusCode != 503 || s.TokensIssued() != 0 {
		t.Fatalf("%v; want a 503 RetrieveError and no token", err)
	}
	s.FailTokens(0)
	if _, err := ts.Token(); err != nil || s.TokensIssued() != 1 {
		t.Errorf("back up: %v, %d issued", err, s.TokensIssued())
	}
	// The same switch over HTTP, for drills against sluice fake.
	for _, q := range []string{"502", "0"} {
		resp, err := http.Post(s.URL+"/fake/token-endpoint?status="+q, "", nil)
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("POST /fake/token-endpoint?status=%s: %v %v", q, resp, err)
		}
		resp.Body.Close()
		resp, err = http.PostForm(s.URL+TokenPath, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := map[string]int{"502": 502, "0": 400}[q]; resp.StatusCode != want {
			t.Errorf("status=%s: the endpoint answered %d, want %d", q, resp.StatusCode, want)
		}
	}
}

// TestTokenEndpointRefusesBadAssertions: an assertion signed with a key
// the endpoint does not know for its account, one for an unknown account,
// and one whose aud is not the account's token_uri get invalid_grant.
func TestTokenEndpointRefusesBadAssertions(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	isolateGoogle(t)
	known, err := s.NewServiceAccount(s.URL + TokenPath)
	if err != nil {
		t.Fatal(err)
	}
	other, err := (&Provider{}).NewServiceAccount(s.URL + TokenPath) // a key s does not know
	if err != nil {
		t.Fatal(err)
	}
	forged := *other
	forged.Email, forged.KeyID = known.Email, ""
	elsewhere := *known
	elsewhere.TokenURI = s.URL + TokenPath + "?for=another-endpoint"
	dir := t.TempDir()
	for name, a := range map[string]*ServiceAccount{"forged": &forged, "unknown": other, "audience": &elsewhere} {
		path := dir + "/" + name + ".json"
		if err := a.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		_, err := sourceOf(t, path).Token()
		var re *oauth2.RetrieveError
		if !errors.As(err, &re) || !strings.Contains(string(re.Body), `"error":"invalid_grant"`) {
			t.Errorf("%s: %v; want invalid_grant", name, err)
		}
	}
	if s.TokensIssued() != 0 {
		t.Errorf("%d tokens issued; want none", s.TokensIssued())
	}
}

// TestVertexGenAI: the genai client on the Vertex AI backend, its
// credentials found as Application Default Credentials
// (GOOGLE_APPLICATION_CREDENTIALS, the written file), its base URL the
// fake, gets an answer and a stream with their usage on one token. It
// calls the v1beta1 paths.
func TestVertexGenAI(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	_, path := tokenSource(t, s)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
	ctx := ctxFor(t)
	c, err := genai.NewClient(ctx, &genai.ClientConfig{Backend: genai.BackendVertexAI, Project: "p1",
		Location: "us-central1", HTTPOptions: genai.HTTPOptions{BaseURL: s.URL}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Models.GenerateContent(ctx, "gemini-2.0-flash", genai.Text("hi"), nil)
	if err != nil {
		t.Fatalf("GenerateContent: %v", err)
	}
	if resp.Text() != "This is a fake answer." || resp.UsageMetadata.CandidatesTokenCount != 5 {
		t.Errorf("answer %q usage %+v", resp.Text(), resp.UsageMetadata)
	}
	var text strings.Builder
	var last *genai.GenerateContentResponse
	for chunk, err := range c.Models.GenerateContentStream(ctx, "gemini-2.0-flash", genai.Text("hi"), nil) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		text.WriteString(chunk.Text())
		last = chunk
	}
	if text.String() != "This is a fake answer." || last.UsageMetadata.CandidatesTokenCount != 5 ||
		last.Candidates[0].FinishReason != genai.FinishReasonStop {
		t.Errorf("stream %q, last %+v", text.String(), last)
	}
	reqs := s.Requests()
	if s.TokensIssued() != 1 || len(reqs) != 2 ||
		reqs[0].Path != "/v1beta1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent" {
		t.Errorf("tokens %d, requests %+v", s.TokensIssued(), reqs)
	}
}

// TestVertexAnthropicStream: :streamRawPredict streams Anthropic's
// events, the model taken from the path.
func TestVertexAnthropicStream(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	ts, _ := tokenSource(t, s)
	resp := postWith(t, oauth2.NewClient(context.Background(), ts), s, vertexClaudeSSE, "stream:events=2", vertexBody)
	evs := streamOf(t, resp)
	if len(evs) != 7 || evs[0].name != "message_start" || evs[6].name != "message_stop" ||
		!strings.Contains(evs[0].data, `"model":"claude-haiku-4-5@20251001"`) {
		t.Errorf("events %+v", evs)
	}
}

// TestVertexErrors: Vertex AI's Anthropic paths answer Anthropic's errors
// and overloaded stream, its Google paths Google's.
func TestVertexErrors(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	ts, _ := tokenSource(t, s)
	c := oauth2.NewClient(context.Background(), ts)
	for _, tt := range []struct{ path, script, body, want string }{
		{vertexClaude, "529", vertexBody, `"overloaded_error"`},
		{vertexClaude, "429", vertexBody, `"rate_limit_error"`},
		{vertexClaudeSSE, "overloaded", vertexBody, "event: error"},
		{vertexGemini, "429", geminiBody, `"RESOURCE_EXHAUSTED"`},
		{vertexGeminiSSE, "overloaded", geminiBody, `"UNAVAILABLE"`},
	} {
		resp := postWith(t, c, s, tt.path, tt.script, tt.body)
		if b := readAll(t, resp); !strings.Contains(string(b), tt.want) {
			t.Errorf("%s %s: %d %s; want %s", tt.path, tt.script, resp.StatusCode, b, tt.want)
		}
	}
}
