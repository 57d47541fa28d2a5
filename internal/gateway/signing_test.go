package gateway

import (
	"encoding/json"
	"errors"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

// signingDialect is a dialect that signs its requests rather than carry
// a key, as Bedrock's and Vertex AI's do: the test's stand-in, speaking
// an existing dialect otherwise.
type signingDialect struct {
	dialect.Dialect
	fail     error      // what Sign fails with; nil to sign
	buildErr error      // what Signer fails with; nil to build one
	built    *signerLog // what each Signer was built from
}

// signerLog records the signers a signingDialect built and what they
// signed.
type signerLog struct {
	mu      sync.Mutex
	opts    []dialect.SignerOptions
	signed  atomic.Int64
	queries []string // the URL query of each request signed
}

// Traits are the stand-in's dialect's, signing.
func (s *signingDialect) Traits() dialect.Traits {
	t := s.Dialect.Traits()
	t.Signs = true
	return t
}

// newSigner builds the stand-in's Signer: the gateway's Options.Signers
// for its kind.
func (s *signingDialect) newSigner(o dialect.SignerOptions) (dialect.Signer, error) {
	s.built.mu.Lock()
	defer s.built.mu.Unlock()
	s.built.opts = append(s.built.opts, o)
	if s.buildErr != nil {
		return nil, s.buildErr
	}
	return &testSigner{region: o.Region, fail: s.fail, log: s.built}, nil
}

// signingKind is a kind whose dialect signs, which a config lets take a
// region and a credentials file; the tests give the gateway a stand-in
// for it.
const signingKind = "bedrock"

// testSigner signs as SigV4 does, in Authorization, with its region.
type testSigner struct {
	region string
	fail   error
	log    *signerLog
}

// testSignature is the Authorization a testSigner of region sets.
func testSignature(region string) string { return "TEST-SIG region=" + region }

func (s *testSigner) Sign(r *http.Request, body []byte) error {
	if s.fail != nil {
		return s.fail
	}
	s.log.mu.Lock()
	s.log.queries = append(s.log.queries, r.URL.RawQuery)
	s.log.mu.Unlock()
	s.log.signed.Add(1)
	r.Header.Set("Authorization", testSignature(s.region))
	return nil
}

// signing returns o with the Dialects and Signers under which the
// providers of kind speak sd and sign with its Signer.
func signing(o Options, kind string, sd *signingDialect) Options {
	o.Dialects = func(k string) (dialect.Dialect, bool) {
		if k == kind {
			return sd, true
		}
		return dialect.Lookup(k)
	}
	o.Signers = maps.Clone(signers)
	o.Signers[kind] = sd.newSigner
	return o
}

// A provider whose dialect signs gets its requests signed by the Signer
// built once from its region, its credentials file and the gateway's
// environment, and never the client's credentials: not in any key header,
// not in the query (?key=, ?access_token=, X-Amz-*), though no key of its
// own is injected.
func TestSigningProviderSigns(t *testing.T) {
	sd := &signingDialect{Dialect: dialect.OpenAI, built: &signerLog{}}
	creds := t.TempDir() + "/creds.json"
	if err := os.WriteFile(creds, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A kind whose dialect signs, for config to take its region and
	// credentials file; the gateway is given the stand-in for it.
	e := newEnvWith(t, "200", func(c *config.Config) {
		p := c.Providers["openai"]
		p.Kind, p.Region, p.CredentialsFile = signingKind, "eu-west-3", creds
		c.Providers["openai"] = p
	}, signing(Options{}, signingKind, sd))
	for range 3 {
		resp := e.do("POST", "/openai/v1/chat/completions?key="+clientKey+"&alt=sse&access_token="+clientKey+"&X-Amz-Credential="+clientKey, chatBody,
			"X-Api-Key", clientKey, "Api-Key", clientKey, "X-Goog-Api-Key", clientKey, "X-Amz-Security-Token", clientKey)
		if got := body(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%d %s, want 200", resp.StatusCode, got)
		}
	}
	if n := len(sd.built.opts); n != 1 {
		t.Fatalf("%d signers built, want 1 for the provider", n)
	}
	o := sd.built.opts[0]
	if o.Region != "eu-west-3" || o.CredentialsFile != creds || o.Getenv == nil || o.Getenv("UPSTREAM_KEY") != "sk-injected-1234" {
		t.Errorf("signer built from %+v, want the provider's region and credentials file and the gateway's environment", o)
	}
	if n := sd.built.signed.Load(); n != 3 {
		t.Errorf("%d requests signed, want 3", n)
	}
	reqs := e.up.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d upstream requests, want 3", len(reqs))
	}
	for _, r := range reqs {
		if got := r.Header.Get("Authorization"); got != testSignature("eu-west-3") {
			t.Errorf("upstream Authorization %q, want the signature", got)
		}
		for k, v := range r.Header {
			if strings.Contains(strings.Join(v, " "), clientKey) {
				t.Errorf("the client's key reached the signing provider in %s", k)
			}
		}
	}
	for _, q := range sd.built.queries {
		if strings.Contains(q, clientKey) || q != "alt=sse" {
			t.Errorf("signed query %q, want alt=sse alone", q)
		}
	}
}

// A signing fallback on another host needs no key of its own (it signs
// with its own Signer), and the primary's client key never reaches it.
func TestSigningFallback(t *testing.T) {
	backup := fake.NewServer("200")
	defer backup.Close()
	sd := &signingDialect{Dialect: dialect.OpenAI, built: &signerLog{}}
	e := newEnvWith(t, "503", func(c *config.Config) {
		p := c.Providers["openai"]
		p.Kind, p.Region = signingKind, "us-east-1"
		c.Providers["openai"] = p
		c.Providers["backup"] = config.Provider{Kind: signingKind, BaseURL: backup.URL, Region: "us-west-2", MaxConcurrent: 8}
		c.Routes[0].Fallbacks = []config.Target{{Provider: "backup", Model: "gpt-4o-mini-backup"}}
	}, signing(Options{}, signingKind, sd))
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	if got := body(t, resp); resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "backup" {
		t.Fatalf("%d %s from %q, want the fallback's answer", resp.StatusCode, got, resp.Header.Get("Sluice-Provider"))
	}
	if e.up.Calls() != 3 || backup.Calls() != 1 {
		t.Fatalf("calls primary %d, backup %d; want 3, 1", e.up.Calls(), backup.Calls())
	}
	if got := e.up.Requests()[0].Header.Get("Authorization"); got != testSignature("us-east-1") {
		t.Errorf("primary got Authorization %q, want its own signature", got)
	}
	r := backup.Requests()[0]
	if got := r.Header.Get("Authorization"); got != testSignature("us-west-2") {
		t.Errorf("fallback got Authorization %q, want its own signature", got)
	}
	if strings.Contains(strings.Join(r.Header.Values("Authorization"), ""), clientKey) {
		t.Error("the client's key reached the fallback")
	}
}

// A fallback must speak the primary's dialect, or one the engine
// translates the primary's calls for: the gateway compares the dialects,
// not their names (a config that mixes kinds is refused before, by its
// validation; these are not validated).
func TestFallbackDialectMustMatch(t *testing.T) {
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	cfg.Providers["other"] = config.Provider{Kind: "azure", BaseURL: "https://other.example", APIKeyEnv: "K", MaxConcurrent: 8}
	cfg.Routes[0].Fallbacks = []config.Target{{Provider: "other", Model: "m"}}
	getenv := func(string) string { return "k" }
	// Vertex AI's calls are translated for no other dialect.
	vx := *cfg
	vx.Providers = maps.Clone(cfg.Providers)
	vx.Providers["vx"] = config.Provider{Kind: "vertex", BaseURL: "https://vertex.example", MaxConcurrent: 8}
	vx.Routes = slices.Clone(cfg.Routes)
	vx.Routes[0].Provider = "vx"
	_, err := New(&vx, signing(Options{Getenv: getenv}, "vertex", &signingDialect{Dialect: dialect.Vertex, built: &signerLog{}}))
	if err == nil || !strings.Contains(err.Error(), "provider other speaks azure, not vertex") {
		t.Errorf("err = %v, want a refusal naming both dialects", err)
	}
	// Vertex AI takes OpenAI's calls translated under a project's
	// location, which a provider without its project cannot give.
	vx = *cfg
	vx.Providers = maps.Clone(cfg.Providers)
	vx.Providers["other"] = config.Provider{Kind: "vertex", BaseURL: "https://vertex.example", Region: "us-east5", MaxConcurrent: 8}
	stub := &signingDialect{Dialect: dialect.Vertex, built: &signerLog{}}
	o := Options{Getenv: getenv, Signers: map[string]func(dialect.SignerOptions) (dialect.Signer, error){"vertex": stub.newSigner}}
	_, err = New(&vx, o)
	if err == nil || !strings.Contains(err.Error(), "provider other speaks vertex, whose calls go under /v1/projects/{project}/locations/{region}; set providers.other.project") {
		t.Errorf("err = %v, want a refusal naming the project", err)
	}
	vx.Providers["other"] = config.Provider{Kind: "vertex", BaseURL: "https://vertex.example", Region: "us-east5", Project: "p1", MaxConcurrent: 8}
	g, err := New(&vx, o)
	if err != nil {
		t.Fatalf("a vertex fallback with its project: %v", err)
	}
	g.Close()
	// A dialect that signs OpenAI's requests is not OpenAI's, though it
	// bears its name.
	sd := &signingDialect{Dialect: dialect.OpenAI, built: &signerLog{}}
	_, err = New(cfg, signing(Options{Getenv: getenv}, "azure", sd))
	if err == nil || !strings.Contains(err.Error(), "fallbacks[0]: provider other speaks") {
		t.Errorf("err = %v, want a refusal", err)
	}
	// The same dialect is taken.
	g, err = New(cfg, Options{Getenv: getenv, Dialects: func(string) (dialect.Dialect, bool) { return dialect.OpenAI, true }})
	if err != nil {
		t.Fatalf("one dialect for both: %v", err)
	}
	g.Close()
}

// A signing provider whose credentials cannot be had gets no request: the
// call is answered 502 upstream_credentials, in the dialect's shape,
// naming the provider and the cause, with no upstream attempt.
func TestSigningCredentialsFail(t *testing.T) {
	cause := errors.New("token endpoint answered 500")
	for _, kind := range []string{"openai", "gemini"} {
		t.Run(kind, func(t *testing.T) {
			base := dialect.OpenAI
			if kind == "gemini" {
				base = dialect.Gemini
			}
			sd := &signingDialect{Dialect: base, fail: cause, built: &signerLog{}}
			e := newEnvWith(t, "200", withGemini, signing(Options{}, kind, sd))
			path, reqBody := "/openai/v1/chat/completions", chatBody
			if kind == "gemini" {
				path, reqBody = geminiGenerate, geminiBody
			}
			resp := e.do("POST", path, reqBody)
			raw := body(t, resp)
			if resp.StatusCode != http.StatusBadGateway {
				t.Fatalf("status %d %s, want 502", resp.StatusCode, raw)
			}
			if e.up.Calls() != 0 {
				t.Errorf("%d upstream calls, want none", e.up.Calls())
			}
			var code string
			if kind == "gemini" {
				_, code = geminiGatewayError(t, raw, http.StatusBadGateway)
			} else {
				var v struct {
					Error struct{ Message, Type, Code string }
				}
				if err := json.Unmarshal([]byte(raw), &v); err != nil || v.Error.Type != v.Error.Code {
					t.Fatalf("not an OpenAI error: %s", raw)
				}
				code = v.Error.Code
			}
			if code != "upstream_credentials" {
				t.Errorf("code %q, want upstream_credentials", code)
			}
			if !strings.Contains(raw, "provider "+kind) || !strings.Contains(raw, cause.Error()) {
				t.Errorf("answer %s, want one naming provider %s and the cause", raw, kind)
			}
			if resp.Header.Get("X-Should-Retry") != "false" {
				t.Error("the answer lacks X-Should-Retry: false")
			}
		})
	}
}

// A signing provider whose Signer cannot be built (no credentials file, a
// file that is no credentials) fails the gateway's start, naming it.
func TestSignerBuildFails(t *testing.T) {
	sd := &signingDialect{Dialect: dialect.OpenAI, buildErr: errors.New("open /nowhere.json: no such file"), built: &signerLog{}}
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	_, err := New(cfg, signing(Options{}, "openai", sd))
	if err == nil || !strings.Contains(err.Error(), "providers.openai") || !strings.Contains(err.Error(), "/nowhere.json") {
		t.Errorf("err = %v, want one naming providers.openai and the cause", err)
	}
}

// Every kind whose dialect signs has a Signer in the gateway's table, and
// no other kind has one.
func TestSignersOfEveryKind(t *testing.T) {
	for _, k := range dialect.Kinds() {
		d, _ := dialect.Lookup(k)
		if _, ok := signers[k]; ok != d.Traits().Signs {
			t.Errorf("kind %s: a signer %v, but the dialect signs: %v", k, ok, d.Traits().Signs)
		}
	}
	if n := len(signers); n != 2 {
		t.Errorf("%d signers, want bedrock's and vertex's", n)
	}
}

// A provider whose dialect signs, with no signer given for its kind,
// fails the gateway's start, naming it.
func TestSignerMissing(t *testing.T) {
	sd := &signingDialect{Dialect: dialect.OpenAI, built: &signerLog{}}
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	o := signing(Options{}, "openai", sd)
	delete(o.Signers, "openai")
	_, err := New(cfg, o)
	if err == nil || !strings.Contains(err.Error(), "providers.openai: kind openai signs its requests, and no signer is given for it") {
		t.Errorf("err = %v, want one naming providers.openai", err)
	}
}
