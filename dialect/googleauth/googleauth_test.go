package googleauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/fake"
)

// vxGemini is a Vertex AI call's path, which the fake takes with a token
// it issued.
const vxGemini = "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent"

// clock is a test's time, moved by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// source is a token source that counts its fetches: the n-th gives
// "tok-n", living life by the clock, or fails with err.
type source struct {
	clock *clock
	life  time.Duration
	gate  chan struct{} // if not nil, each fetch waits for it to close

	mu    sync.Mutex
	calls int
	err   error
}

func (s *source) Token() (*oauth2.Token, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	if s.err != nil {
		return nil, s.err
	}
	return &oauth2.Token{AccessToken: fmt.Sprint("tok-", s.calls), Expiry: s.clock.now().Add(s.life)}, nil
}

func (s *source) fetches() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func (s *source) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.err = err
}

func newSigner(life time.Duration) (*tokenSigner, *source, *clock) {
	c := &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	src := &source{clock: c, life: life}
	return &tokenSigner{src: src, now: c.now}, src, c
}

// sign signs a request with s and returns its Authorization.
func sign(ctx context.Context, s dialect.Signer) (string, error) {
	r, _ := http.NewRequestWithContext(ctx, "POST", "http://127.0.0.1/x", nil)
	err := s.Sign(r, nil)
	return r.Header.Get("Authorization"), err
}

// deadline is a context for one wait of a test: 10 s at most.
func deadline(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func mustSign(t *testing.T, s dialect.Signer, want string) {
	t.Helper()
	if got, err := sign(deadline(t), s); err != nil || got != "Bearer "+want {
		t.Fatalf("Sign: %q, %v; want Bearer %s", got, err, want)
	}
}

// settle waits for the fetch under way, if any, to end.
func settle(t *testing.T, s *tokenSigner) {
	t.Helper()
	s.mu.Lock()
	f := s.flight
	s.mu.Unlock()
	if f == nil {
		return
	}
	select {
	case <-f:
	case <-time.After(5 * time.Second):
		t.Fatal("the fetch did not end")
	}
}

func TestSignerOneTokenForAll(t *testing.T) {
	s, src, _ := newSigner(time.Hour)
	src.gate = make(chan struct{})
	time.AfterFunc(50*time.Millisecond, func() { close(src.gate) }) // the calls pile up on the first fetch
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			if got, err := sign(deadline(t), s); err != nil || got != "Bearer tok-1" {
				t.Errorf("Sign: %q, %v", got, err)
			}
		})
	}
	wg.Wait()
	if src.fetches() != 1 {
		t.Errorf("%d fetches for 100 calls; want 1", src.fetches())
	}
}

// TestSignerRefreshesEarly: an hour's token is refreshed 5 minutes before
// it expires, by one fetch the calls do not wait for; the new token is
// used once it is had.
func TestSignerRefreshesEarly(t *testing.T) {
	s, src, c := newSigner(time.Hour)
	mustSign(t, s, "tok-1")
	c.add(55*time.Minute - time.Second)
	mustSign(t, s, "tok-1")
	if src.fetches() != 1 {
		t.Fatalf("refreshed %d times before the window", src.fetches()-1)
	}
	src.gate = make(chan struct{})
	c.add(2 * time.Second)
	for range 10 {
		mustSign(t, s, "tok-1") // the fetch is held at the gate: no call waits for it
	}
	close(src.gate)
	settle(t, s)
	mustSign(t, s, "tok-2")
	if src.fetches() != 2 {
		t.Errorf("%d fetches; want 2", src.fetches())
	}
}

// TestSignerWaitsNearExpiry: a token 10 s from its expiry is not used:
// the call waits for the new one.
func TestSignerWaitsNearExpiry(t *testing.T) {
	s, src, c := newSigner(time.Hour)
	mustSign(t, s, "tok-1")
	c.add(time.Hour - 10*time.Second)
	mustSign(t, s, "tok-2")
	// A short-lived token: refreshed half-way, used until a quarter of
	// its life is left.
	src.life = 2 * time.Second
	c.add(time.Hour)
	mustSign(t, s, "tok-3")
	c.add(900 * time.Millisecond)
	mustSign(t, s, "tok-3")
	if src.fetches() != 3 {
		t.Fatalf("%d fetches; want 3", src.fetches())
	}
	c.add(200 * time.Millisecond) // 1.1 s: refreshed, tok-3 still served
	src.gate = make(chan struct{})
	mustSign(t, s, "tok-3")
	close(src.gate)
	settle(t, s)
	c.add(500 * time.Millisecond) // 0.9 s of tok-4's 2
	mustSign(t, s, "tok-4")
}

// TestSignerFailureShared: while the source fails, concurrent calls share
// one fetch and its error, which is kept for a second before the source
// is asked again.
func TestSignerFailureShared(t *testing.T) {
	s, src, c := newSigner(time.Hour)
	down := errors.New("token endpoint down")
	src.fail(down)
	var wg sync.WaitGroup
	var failed atomic.Int32
	for range 50 {
		wg.Go(func() {
			if _, err := sign(deadline(t), s); errors.Is(err, down) {
				failed.Add(1)
			}
		})
	}
	wg.Wait()
	if failed.Load() != 50 || src.fetches() != 1 {
		t.Fatalf("%d of 50 calls failed with the source's error, %d fetches; want 50 and 1", failed.Load(), src.fetches())
	}
	c.add(tokenHold - time.Millisecond)
	if _, err := sign(deadline(t), s); !errors.Is(err, down) || src.fetches() != 1 {
		t.Fatalf("within the hold: %v, %d fetches; want the kept error and no fetch", err, src.fetches())
	}
	c.add(time.Millisecond)
	if _, err := sign(deadline(t), s); !errors.Is(err, down) || src.fetches() != 2 {
		t.Fatalf("after the hold: %v, %d fetches; want a second fetch", err, src.fetches())
	}
	src.fail(nil)
	c.add(tokenHold)
	mustSign(t, s, "tok-3")
}

// TestSignerFailureKeepsToken: a refresh that fails leaves the old token
// in use while it is usable, the source asked once a second.
func TestSignerFailureKeepsToken(t *testing.T) {
	s, src, c := newSigner(time.Hour)
	mustSign(t, s, "tok-1")
	down := errors.New("token endpoint down")
	src.fail(down)
	c.add(56 * time.Minute)
	for i := range 3 {
		mustSign(t, s, "tok-1")
		settle(t, s)
		mustSign(t, s, "tok-1")
		if src.fetches() != 2+i {
			t.Fatalf("%d fetches; want %d", src.fetches(), 2+i)
		}
		c.add(tokenHold)
	}
	c.add(4 * time.Minute) // 10 s left
	if _, err := sign(deadline(t), s); !errors.Is(err, down) {
		t.Errorf("no usable token: %v; want the source's error", err)
	}
}

func TestSignerContext(t *testing.T) {
	s, src, _ := newSigner(time.Hour)
	src.gate = make(chan struct{})
	defer close(src.gate)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := sign(ctx, s); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Sign = %v; want the context's error", err)
	}
}

// isolateGoogle keeps Google's libraries away from the machine's
// credentials, gcloud's files and the metadata server.
func isolateGoogle(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("CLOUDSDK_CONFIG", dir)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
	t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1")
	t.Setenv("GCE_METADATA_IP", "127.0.0.1:1")
	t.Setenv("NO_GCE_CHECK", "True")
}

// counting counts the requests it sends.
type counting struct{ n atomic.Int32 }

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// TestVertexSignerServiceAccount: a signer of the fake's service-account
// file, named by the options or by GOOGLE_APPLICATION_CREDENTIALS, gets a
// token from the fake's token endpoint that the fake's Vertex AI takes.
func TestVertexSignerServiceAccount(t *testing.T) {
	isolateGoogle(t)
	s := fake.NewServer("200")
	defer s.Close()
	path, err := s.WriteServiceAccount(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]dialect.SignerOptions{
		"file": {CredentialsFile: path},
		"env": {Getenv: func(k string) string {
			if k == "GOOGLE_APPLICATION_CREDENTIALS" {
				return path
			}
			return ""
		}},
	} {
		s.Reset()
		sg, err := New(o)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for range 3 {
			r, _ := http.NewRequest("POST", s.URL+vxGemini, strings.NewReader(`{"contents":[]}`))
			if err := sg.Sign(r, nil); err != nil {
				t.Fatalf("%s: Sign: %v", name, err)
			}
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("%s: %d", name, resp.StatusCode)
			}
		}
		if s.TokensIssued() != 1 || s.Calls() != 3 || s.Unauthorized() != 0 {
			t.Errorf("%s: %d tokens, %d calls, %d refused; want 1, 3, 0", name, s.TokensIssued(), s.Calls(), s.Unauthorized())
		}
	}
}

// TestVertexSignerEndpointDown: a token endpoint that fails is the
// endpoint's error, and 50 concurrent calls ask it once.
func TestVertexSignerEndpointDown(t *testing.T) {
	isolateGoogle(t)
	s := fake.NewServer("200")
	defer s.Close()
	path, err := s.WriteServiceAccount(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.FailTokens(500)
	ct := &counting{}
	sg, err := New(dialect.SignerOptions{CredentialsFile: path, Client: &http.Client{Transport: ct}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var refused atomic.Int32
	for range 50 {
		wg.Go(func() {
			_, err := sign(deadline(t), sg)
			var re *oauth2.RetrieveError
			if errors.As(err, &re) && re.Response.StatusCode == 500 {
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	if refused.Load() != 50 || ct.n.Load() > 2 || s.TokensIssued() != 0 {
		t.Errorf("%d of 50 failed with the endpoint's 500, after %d token requests; want 50, at most 2", refused.Load(), ct.n.Load())
	}
}

func TestVertexSignerBadCredentials(t *testing.T) {
	isolateGoogle(t)
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"type":"service_account"}`), 0o600)
	notJSON := filepath.Join(dir, "not.json")
	os.WriteFile(notJSON, []byte(`nope`), 0o600)
	for _, f := range []string{filepath.Join(dir, "missing.json"), bad, notJSON} {
		if _, err := New(dialect.SignerOptions{CredentialsFile: f}); err == nil {
			t.Errorf("%s: a signer; want an error", f)
		}
	}
}

// TestVertexSignerNoCredentials: without a credentials file the metadata
// server is asked (here a loopback port nothing listens on): its failure
// is Sign's error.
func TestVertexSignerNoCredentials(t *testing.T) {
	isolateGoogle(t)
	sg, err := New(dialect.SignerOptions{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Logf("Signer: %v", err)
		return
	}
	_, err = sign(deadline(t), sg)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("Sign: %v; want the metadata server's failure", err)
	}
}
