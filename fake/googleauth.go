package fake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// This file holds Google's OAuth2 side of Vertex AI: the token endpoint
// (POST /token) a service-account file's token_uri points at, the
// service accounts it knows, and the bearer tokens it issued.

// TokenPath is the path of the Provider's token endpoint.
const TokenPath = "/token"

// defaultTokenLifetime is the lifetime of an access token when
// Provider.TokenLifetime is zero, as Google gives it.
const defaultTokenLifetime = time.Hour

// ServiceAccount is a Google service account whose public key the
// Provider's token endpoint knows: a JWT-bearer assertion signed with Key
// gets an access token there.
type ServiceAccount struct {
	// Email is the account's client_email, its assertions' iss.
	Email string
	// KeyID is the key's private_key_id, its assertions' kid.
	KeyID string
	// Key is the account's private key.
	Key *rsa.PrivateKey
	// ProjectID is the account's project_id.
	ProjectID string
	// TokenURI is the account's token_uri: the Provider's token endpoint,
	// which its assertions' aud must name.
	TokenURI string
}

// FakeProject is the project of the service accounts NewServiceAccount
// makes.
const FakeProject = "sluice-fake-project"

// JSON returns the account's key file, as Google's console writes one
// ("type": "service_account"), for golang.org/x/oauth2/google,
// cloud.google.com/go/auth or GOOGLE_APPLICATION_CREDENTIALS.
func (a *ServiceAccount) JSON() []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(a.Key) // an RSA key always marshals
	b, _ := json.MarshalIndent(map[string]string{
		"type":                        "service_account",
		"project_id":                  a.ProjectID,
		"private_key_id":              a.KeyID,
		"private_key":                 string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":                a.Email,
		"client_id":                   "100000000000000000001",
		"auth_uri":                    "https://accounts.google.com/o/oauth2/auth",
		"token_uri":                   a.TokenURI,
		"auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
		"universe_domain":             "googleapis.com",
	}, "", "  ")
	return b
}

// WriteFile writes the account's key file to path with mode 0600.
func (a *ServiceAccount) WriteFile(path string) error {
	return os.WriteFile(path, a.JSON(), 0o600)
}

// NewServiceAccount makes a service account of FakeProject with a fresh
// 2048-bit RSA key, whose token_uri is tokenURI (the Provider's URL and
// TokenPath), and makes the Provider's token endpoint know it.
func (p *Provider) NewServiceAccount(tokenURI string) (*ServiceAccount, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	id := strings.ToLower(rand.Text())
	a := &ServiceAccount{
		Email:     "fake-" + id[:12] + "@" + FakeProject + ".iam.gserviceaccount.com",
		KeyID:     id,
		Key:       key,
		ProjectID: FakeProject,
		TokenURI:  tokenURI,
	}
	p.auth.mu.Lock()
	defer p.auth.mu.Unlock()
	if p.auth.accounts == nil {
		p.auth.accounts = make(map[string]*ServiceAccount)
	}
	p.auth.accounts[a.Email] = a
	return a, nil
}

// WriteServiceAccount writes the key file of a new service account (see
// Provider.NewServiceAccount) whose token_uri is the server's token
// endpoint into dir, and returns its path.
func (s *Server) WriteServiceAccount(dir string) (string, error) {
	a, err := s.NewServiceAccount(s.URL + TokenPath)
	if err != nil {
		return "", err
	}
	path := dir + string(os.PathSeparator) + "service-account.json"
	return path, a.WriteFile(path)
}

// authState is what the token endpoint knows, its service accounts and
// the tokens it issued, and the count of calls Bedrock and Vertex AI
// refused for their credentials.
type authState struct {
	mu       sync.Mutex
	accounts map[string]*ServiceAccount // by email
	tokens   map[string]time.Time       // the tokens issued, by when they expire
	issued   int                        // tokens issued since the start or the last Reset
	asked    int                        // token requests since the start or the last Reset, refused ones too
	refused  int                        // calls refused for their credentials, Bedrock's too
	down     int                        // the status the token endpoint answers with; 0 when up
}

// FailTokens makes the token endpoint answer every request with status
// (503, 500, …), issuing no token, until FailTokens(0). Tokens issued
// before stay valid.
func (p *Provider) FailTokens(status int) {
	p.auth.mu.Lock()
	defer p.auth.mu.Unlock()
	p.auth.down = status
}

// serveTokenSwitch is POST /fake/token-endpoint?status=N: FailTokens(N),
// 0 to bring the endpoint back.
func (p *Provider) serveTokenSwitch(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "fake: use POST /fake/token-endpoint?status=N", http.StatusMethodNotAllowed)
		return
	}
	n, err := strconv.Atoi(r.URL.Query().Get("status"))
	if err != nil || (n != 0 && (n < 400 || n > 599)) {
		http.Error(w, "fake: status=N wants a 4xx or 5xx status, or 0 for a working endpoint", http.StatusBadRequest)
		return
	}
	p.FailTokens(n)
	w.WriteHeader(http.StatusNoContent)
}

// TokensIssued returns how many access tokens the token endpoint issued
// since the start or the last Reset.
func (p *Provider) TokensIssued() int {
	p.auth.mu.Lock()
	defer p.auth.mu.Unlock()
	return p.auth.issued
}

// TokenRequests returns how many requests the token endpoint got since
// the start or the last Reset, refused ones too.
func (p *Provider) TokenRequests() int {
	p.auth.mu.Lock()
	defer p.auth.mu.Unlock()
	return p.auth.asked
}

// Unauthorized returns how many calls to the Bedrock and Vertex AI
// endpoints were refused for their credentials (a bad or missing
// signature, an unknown or expired token) since the start or the last
// Reset. They play no step and are not counted in Calls.
func (p *Provider) Unauthorized() int {
	p.auth.mu.Lock()
	defer p.auth.mu.Unlock()
	return p.auth.refused
}

// oauthError is the token endpoint's error body.
type oauthError struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// serveToken is the token endpoint: the OAuth2 JWT-bearer grant
// (RFC 7523) of a service account, its assertion RS256-signed.
func (p *Provider) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "fake: use POST "+TokenPath, http.StatusMethodNotAllowed)
		return
	}
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, marshal(oauthError{"invalid_request", err.Error()}))
		return
	}
	now := p.now()
	g := &p.auth
	g.mu.Lock()
	defer g.mu.Unlock()
	g.asked++
	if g.down != 0 {
		writeJSON(w, g.down, marshal(oauthError{"temporarily_unavailable", "The token endpoint is down."}))
		return
	}
	if gt := r.PostForm.Get("grant_type"); gt != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		writeJSON(w, http.StatusBadRequest, marshal(oauthError{"unsupported_grant_type", "Invalid grant_type: " + gt}))
		return
	}
	if msg := g.verifyLocked(r.PostForm.Get("assertion"), now); msg != "" {
		writeJSON(w, http.StatusBadRequest, marshal(oauthError{"invalid_grant", msg}))
		return
	}
	life := p.TokenLifetime
	if life <= 0 {
		life = defaultTokenLifetime
	}
	tok := "ya29.fake-" + rand.Text()
	if g.tokens == nil {
		g.tokens = make(map[string]time.Time)
	}
	for t, exp := range g.tokens { // forget the expired, so a long drill does not grow
		if !exp.After(now) {
			delete(g.tokens, t)
		}
	}
	g.tokens[tok] = now.Add(life)
	g.issued++
	writeJSON(w, http.StatusOK, marshal(map[string]any{
		"access_token": tok, "expires_in": int(life / time.Second), "token_type": "Bearer",
	}))
}

// maxAssertionLife is the longest an assertion may live, exp - iat, as
// Google allows; assertionSkew how far its iat may be ahead of the clock.
const (
	maxAssertionLife = time.Hour
	assertionSkew    = time.Minute
)

// verifyLocked checks a JWT-bearer assertion at now: signed RS256 by a
// known account's key (kid naming it, when given), its aud that account's
// token_uri, alive. It returns "" for a good one, else Google's message.
func (g *authState) verifyLocked(assertion string, now time.Time) string {
	parts := strings.Split(assertion, ".")
	if len(parts) != 3 {
		return "Invalid JWT: malformed assertion."
	}
	var head struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Iss string `json:"iss"`
		Aud string `json:"aud"`
		Iat int64  `json:"iat"`
		Exp int64  `json:"exp"`
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || decodeSegment(parts[0], &head) != nil || decodeSegment(parts[1], &claims) != nil {
		return "Invalid JWT: malformed assertion."
	}
	a := g.accounts[claims.Iss]
	switch {
	case a == nil:
		return "Invalid grant: account not found"
	case head.Alg != "RS256" || (head.Kid != "" && head.Kid != a.KeyID):
		return "Invalid JWT Signature."
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if rsa.VerifyPKCS1v15(&a.Key.PublicKey, crypto.SHA256, sum[:], sig) != nil {
		return "Invalid JWT Signature."
	}
	iat, exp := time.Unix(claims.Iat, 0), time.Unix(claims.Exp, 0)
	if claims.Aud != a.TokenURI {
		return "Invalid JWT: Failed audience check."
	}
	if !exp.After(now) || iat.After(now.Add(assertionSkew)) || exp.Sub(iat) > maxAssertionLife {
		return "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. " +
			"Check your iat and exp values in the JWT claim."
	}
	return ""
}

// decodeSegment decodes a JWT segment, base64url JSON, into v.
func decodeSegment(s string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// checkBearer reports whether a request carries a token the endpoint
// issued that is alive at now; if not, it answers 401 in Google's shape
// and counts the refusal.
func (p *Provider) checkBearer(w http.ResponseWriter, r *http.Request) bool {
	now := p.now()
	g := &p.auth
	g.mu.Lock()
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	exp, ok := g.tokens[tok]
	ok = ok && tok != "" && exp.After(now)
	if !ok {
		g.refused++
	}
	g.mu.Unlock()
	if ok {
		return true
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/", error="invalid_token"`)
	writeJSON(w, http.StatusUnauthorized, marshal(newGeminiErr(http.StatusUnauthorized, "",
		"Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other "+
			"valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.", "")))
	return false
}

// reset forgets the counts, keeping the accounts and the tokens issued
// (a client may still hold one).
func (g *authState) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.issued, g.refused, g.asked = 0, 0, 0
}
