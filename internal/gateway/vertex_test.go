package gateway

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/auth"
	"google.golang.org/genai"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

// vertexClientToken is the bearer token a client's Google SDK sends: the
// gateway takes it for the client's token.
const vertexClientToken = "ya29.client-token-sluice-0001"

// newVertexEnv is a gateway env with a provider of kind vertex on the
// fake, its credentials the fake's service-account file (whose token_uri
// is the fake's token endpoint), a route /vertex to it, and the client's
// bearer token as a client token. The file needs the fake, which the env
// starts: the vertex provider comes in by a reload.
func newVertexEnv(t *testing.T) *env {
	t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1") // never the metadata server
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	e := newEnv(t, "200", nil)
	path, err := e.up.WriteServiceAccount(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	err = e.gw.Reload(func() (*config.Config, error) {
		c := *e.cfg
		c.Providers = maps.Clone(c.Providers)
		c.Providers["vertex"] = config.Provider{Kind: "vertex", BaseURL: e.up.URL,
			Region: "us-central1", CredentialsFile: path, MaxConcurrent: 64}
		c.Routes = append(slices.Clone(c.Routes),
			config.Route{Prefix: "/vertex", Provider: "vertex", Policy: "interactive", RetrySafe: true})
		c.Auth.Keys = append(slices.Clone(c.Auth.Keys), vertexClientToken)
		return &c, c.Validate()
	})
	if err != nil {
		t.Fatalf("reload with a vertex provider: %v", err)
	}
	return e
}

// staticToken is a token provider that always gives the client's token.
type staticToken struct{}

func (staticToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: vertexClientToken, Type: "Bearer", Expiry: time.Now().Add(time.Hour)}, nil
}

// TestVertexGenAIThroughGateway: google.golang.org/genai's own client on
// the Vertex AI backend, pointed at the gateway, gets an answer and a
// stream; the gateway authenticates it by its bearer token, and calls
// upstream with one token of its own, fetched once from the token
// endpoint of its service account for every call.
func TestVertexGenAIThroughGateway(t *testing.T) {
	e := newVertexEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := genai.NewClient(ctx, &genai.ClientConfig{Backend: genai.BackendVertexAI, Project: "p1",
		Location: "us-central1", Credentials: auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: staticToken{}}),
		HTTPOptions: genai.HTTPOptions{BaseURL: e.srv.URL + "/vertex",
			Headers: http.Header{fake.ScriptHeader: {"503,200"}}}})
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
	overloaded := &genai.GenerateContentConfig{HTTPOptions: &genai.HTTPOptions{
		Headers: http.Header{fake.ScriptHeader: {"overloaded,200"}}}} // the first event an error
	for chunk, err := range c.Models.GenerateContentStream(ctx, "gemini-2.0-flash", genai.Text("hi"), overloaded) {
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		text.WriteString(chunk.Text())
	}
	if text.String() != "This is a fake answer." {
		t.Errorf("stream %q", text.String())
	}
	reqs := e.up.Requests()
	if len(reqs) != 4 { // a 503 and an overloaded first event, each retried
		t.Fatalf("upstream calls %d, want 4", len(reqs))
	}
	for i, r := range reqs {
		if a := r.Header.Get("Authorization"); !strings.HasPrefix(a, "Bearer ") || strings.Contains(a, vertexClientToken) ||
			!strings.Contains(r.Path, "/publishers/google/models/gemini-2.0-flash:") {
			t.Errorf("call %d: %s with %q; want the gateway's own token", i+1, r.Path, a)
		}
	}
	if n := e.up.TokensIssued(); n != 1 {
		t.Errorf("%d tokens fetched for 4 calls; want 1", n)
	}
}

// TestVertexTokenEndpointDownAnswers502: when the token endpoint fails,
// the client gets a clear 502 in Google's shape naming the credentials,
// and no call goes upstream; the token endpoint is not hammered.
func TestVertexTokenEndpointDownAnswers502(t *testing.T) {
	e := newVertexEnv(t)
	e.up.FailTokens(http.StatusInternalServerError)
	for range 5 {
		resp := e.do("POST", "/vertex/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent",
			`{"contents":[{"parts":[{"text":"hi"}]}]}`, "Authorization", "Bearer "+vertexClientToken)
		body := body(t, resp)
		if resp.StatusCode != http.StatusBadGateway || !strings.Contains(body, "credentials") {
			t.Fatalf("%d %s; want a 502 naming the credentials", resp.StatusCode, body)
		}
	}
	if n := len(e.up.Requests()); n != 0 {
		t.Errorf("%d upstream calls; want none", n)
	}
	if n := e.up.TokenRequests(); n > 2 {
		t.Errorf("%d token requests for 5 calls; want at most 2", n)
	}
}
