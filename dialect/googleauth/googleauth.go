// Package googleauth authorizes Vertex AI requests with OAuth2 bearer
// tokens of Google's Application Default Credentials, through
// golang.org/x/oauth2/google: the Signer of dialect.Vertex, which carries
// no plain key. It is apart from package dialect so that a program that
// does not call Vertex AI does not compile Google's OAuth2 libraries; the
// gateway builds one per Vertex AI provider, and a library user sets it as
// the Transport's Signer:
//
//	s, err := googleauth.New(dialect.SignerOptions{})
//	...
//	client := &http.Client{Transport: &sluice.Transport{Dialect: dialect.Vertex, Signer: s}}
package googleauth

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/sluice-llm/sluice/dialect"
)

// cloudPlatformScope is the OAuth2 scope of Vertex AI's API.
const cloudPlatformScope = "https://www.googleapis.com/auth/cloud-platform"

// The life of a Vertex Signer's token.
const (
	// tokenEarly is how long before its expiry a token is refreshed, or
	// half its life for a token that lives less than twice that. The old
	// token keeps serving while the new one is fetched, until tokenSkew
	// (or a quarter of its life) before it expires.
	tokenEarly = 5 * time.Minute
	tokenSkew  = 10 * time.Second
	// tokenHold is how long a failed fetch's error is given to callers
	// that have no token before the token endpoint is asked again: the
	// endpoint is asked at most once in tokenHold, one request at a time.
	tokenHold = time.Second
	// tokenTimeout bounds a token request whose client has no timeout.
	tokenTimeout = 30 * time.Second
)

// errStaleToken is the error of a signer whose credentials gave a token
// that is about to expire, and no other.
var errStaleToken = errors.New("dialect: vertex: the credentials gave a token about to expire")

// New returns a Signer that authorizes each request with an OAuth2
// bearer token of Application Default Credentials, through
// golang.org/x/oauth2/google: o.CredentialsFile if set, else the file
// GOOGLE_APPLICATION_CREDENTIALS names (read with o.Getenv), else
// google.FindDefaultCredentials (gcloud's file, the metadata server), with
// the cloud-platform scope. Tokens are requested with o.Client
// (http.DefaultClient if nil), given a 30 s timeout if it has none.
//
// The Signer holds one token for all its calls and refreshes it 5 minutes
// before it expires (half-way through the life of a token that lives
// less than 10 minutes); the old token serves the calls meanwhile, until
// 10 s (a quarter of its life, if less) before it expires. One token request is made at a time, its result
// shared by every call that waits for it; after a failure, calls without a
// usable token get its error for a second before the endpoint is asked
// again. It is safe for concurrent use.
func New(o dialect.SignerOptions) (dialect.Signer, error) {
	c := http.DefaultClient
	if o.Client != nil {
		c = o.Client
	}
	if c.Timeout == 0 {
		cc := *c
		cc.Timeout = tokenTimeout
		c = &cc
	}
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, c)
	src, err := googleSource(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("dialect: vertex: credentials: %w", err)
	}
	// For a service account, src is oauth2's own cache, which this makes
	// refresh when the signer does, not 10 s before expiry. Other
	// credentials keep oauth2's 10 s inside their source: the signer's
	// early asks get the held token back, from memory, until then.
	src = oauth2.ReuseTokenSourceWithExpiry(nil, src, tokenEarly)
	return &tokenSigner{src: src, now: time.Now}, nil
}

// googleSource returns the token source of the credentials o names.
func googleSource(ctx context.Context, o dialect.SignerOptions) (oauth2.TokenSource, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	file := o.CredentialsFile
	if file == "" {
		file = getenv("GOOGLE_APPLICATION_CREDENTIALS")
	}
	if file == "" {
		creds, err := google.FindDefaultCredentialsWithParams(ctx, google.CredentialsParams{
			Scopes: []string{cloudPlatformScope}, EarlyTokenRefresh: tokenEarly,
		})
		if err != nil {
			return nil, err
		}
		return creds.TokenSource, nil
	}
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var f struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if f.Type == string(google.ServiceAccount) {
		cfg, err := google.JWTConfigFromJSON(b, cloudPlatformScope)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		if block, _ := pem.Decode(cfg.PrivateKey); cfg.Email == "" || block == nil {
			return nil, fmt.Errorf("%s: a service account without a client_email or a PEM private_key", file)
		}
		return cfg.TokenSource(ctx), nil
	}
	creds, err := google.CredentialsFromJSONWithTypeAndParams(ctx, b, google.CredentialsType(f.Type),
		google.CredentialsParams{Scopes: []string{cloudPlatformScope}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return creds.TokenSource, nil
}

// tokenSigner puts a bearer token of src on each request: the token
// held, refreshed by one fetch at a time.
type tokenSigner struct {
	src oauth2.TokenSource
	now func() time.Time

	mu     sync.Mutex
	tok    *oauth2.Token
	got    time.Time     // when tok was fetched
	err    error         // the last fetch's error; nil after a success
	asked  time.Time     // when the last fetch ended
	flight chan struct{} // closed when the fetch under way ends; nil when none
}

// Sign sets r's Authorization to the held token, fetching one first if
// none is usable. It fails with the token endpoint's error, or r's
// context's.
func (s *tokenSigner) Sign(r *http.Request, _ []byte) error {
	tok, err := s.token(r.Context())
	if err != nil {
		return err
	}
	tok.SetAuthHeader(r)
	return nil
}

// token returns a usable token: the one held, fresh; or, when it is
// getting old, still it while a fetch runs; or, when none is usable, the
// fetch's result, which it waits for.
func (s *tokenSigner) token(ctx context.Context) (*oauth2.Token, error) {
	s.mu.Lock()
	now := s.now()
	fresh, usable := s.ageLocked(now)
	if fresh {
		tok := s.tok
		s.mu.Unlock()
		return tok, nil
	}
	if s.flight == nil && (s.asked.IsZero() || now.Sub(s.asked) >= tokenHold) {
		s.flight = make(chan struct{})
		go s.fetch(s.flight)
	}
	tok, flight, err := s.tok, s.flight, s.err
	s.mu.Unlock()
	switch {
	case usable:
		return tok, nil
	case flight == nil && err != nil:
		return nil, err
	case flight == nil:
		return nil, errStaleToken
	}
	select {
	case <-flight:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, usable := s.ageLocked(s.now()); usable {
		return s.tok, nil
	}
	if s.err != nil {
		return nil, s.err
	}
	return nil, errStaleToken
}

// ageLocked reports whether the token held is fresh (not yet to be
// refreshed) and usable (not about to expire) at now.
func (s *tokenSigner) ageLocked(now time.Time) (fresh, usable bool) {
	if s.tok == nil || s.tok.AccessToken == "" {
		return false, false
	}
	if s.tok.Expiry.IsZero() {
		return true, true
	}
	life := s.tok.Expiry.Sub(s.got)
	return now.Before(s.tok.Expiry.Add(-min(tokenEarly, life/2))), now.Before(s.tok.Expiry.Add(-min(tokenSkew, life/4)))
}

// fetch asks the source for a token and keeps what it gives, then closes
// done.
func (s *tokenSigner) fetch(done chan struct{}) {
	tok, err := s.src.Token()
	s.mu.Lock()
	now := s.now()
	switch {
	case err != nil:
		s.err = fmt.Errorf("dialect: vertex: no access token: %w", err)
	case tok == nil || tok.AccessToken == "":
		s.err = errors.New("dialect: vertex: no access token: the credentials gave an empty one")
	default:
		s.tok, s.got, s.err = tok, now, nil
	}
	s.asked, s.flight = now, nil
	s.mu.Unlock()
	close(done)
}
