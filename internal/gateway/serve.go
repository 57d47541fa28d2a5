package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluice-llm/sluice/dialect"
)

// ServeHTTP answers the admin endpoints and forwards everything under a
// route's prefix, under the config current when the request arrived.
// Every answer carries the call's id in Sluice-Request-Id (the client's
// X-Request-Id or X-Client-Request-Id when it sent a valid one, else a new
// one); the gateway's own answers carry it in X-Request-Id too, while a
// relayed answer keeps the provider's X-Request-Id.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g = g.current.Load()
	id := callID(r.Header)
	ids := []string{id}
	w.Header()["Sluice-Request-Id"], w.Header()["X-Request-Id"] = ids, ids
	if r.URL.IsAbs() || r.URL.Host != "" || !strings.HasPrefix(r.RequestURI, "/") {
		writeError(w, config0, http.StatusBadRequest, codeBadRequest, "sluice: only origin-form request targets (/path) are served")
		return
	}
	switch p := r.URL.Path; {
	case p == "/healthz":
		g.serveHealth(w, r)
		return
	case p == "/sluice": // the status page, asked for without its slash
		to := "/sluice/"
		if r.URL.RawQuery != "" {
			to += "?" + r.URL.RawQuery
		}
		http.Redirect(w, r, to, http.StatusMovedPermanently)
		return
	case p == "/metrics", strings.HasPrefix(p, "/sluice/"):
		if !g.adminAllowed(r) {
			writeError(w, config0, http.StatusUnauthorized, codeUnauthorized, "sluice: admin endpoints need the admin token (Authorization: Bearer …) off loopback")
			return
		}
		g.serveAdmin(w, r)
		return
	}
	rt, rest := g.match(r.URL.Path)
	if rt == nil {
		writeError(w, config0, http.StatusNotFound, codeNotFound, "sluice: no route for this path (routes start with a configured prefix such as /openai/)")
		return
	}
	g.forward(w, r, rt, rest, id)
}

// Protocols returns the protocols a server of the gateway speaks on its
// plain port: HTTP/1.1, and HTTP/2 with prior knowledge (h2c), which the
// AWS SDK for JavaScript speaks by default. An http.Server serving a
// Gateway sets its Protocols to them.
func Protocols() *http.Protocols {
	p := new(http.Protocols)
	p.SetHTTP1(true)
	p.SetUnencryptedHTTP2(true)
	return p
}

// config0 is the dialect of answers made before a route is known, and of
// the admin endpoints': OpenAI's.
var config0 = dialect.OpenAI

// match finds the route of a path and returns the path with the prefix
// stripped (starting with "/", or "" for the prefix itself).
func (g *Gateway) match(path string) (*route, string) {
	for _, rt := range g.routes {
		if rest, ok := strings.CutPrefix(path, rt.prefix); ok && (rest == "" || rest[0] == '/') {
			return rt, rest
		}
	}
	return nil, ""
}

// safePath reports whether a request's path may be forwarded: no dot
// segments (also as "..;"), no encoded slashes, backslashes or dots, no
// double encoding, no empty segments. The one encoded slash allowed is
// in the model segment the route's dialect c finds below prefix (a
// Bedrock model ARN's, %2F as the AWS SDKs send it), which is checked
// as if its escaped slashes were plain ones: no dot or empty segment
// there either.
func safePath(r *http.Request, prefix string, c dialect.Client) bool {
	raw := r.URL.EscapedPath()
	if r.URL.RawPath != "" {
		raw = r.URL.RawPath
	}
	if rest, ok := strings.CutPrefix(raw, prefix); ok {
		if start, end := c.EscapedModel(rest); start >= 0 {
			start, end = start+len(prefix), end+len(prefix)
			raw = raw[:start] + slashes.Replace(raw[start:end]) + raw[end:]
		}
	}
	lower := strings.ToLower(raw)
	for _, bad := range []string{"%2f", "%5c", "%2e", "%00", "\\", "//"} {
		if strings.Contains(lower, bad) {
			return false
		}
	}
	for seg := range strings.SplitSeq(r.URL.Path, "/") {
		seg, _, _ = strings.Cut(seg, ";") // "..;" is ".." to some servers
		if seg == "." || seg == ".." {
			return false
		}
	}
	// A % left after decoding was encoded twice (%252e): a trick, not an API path.
	return !strings.ContainsAny(r.URL.Path, "\\\x00%")
}

// slashes makes a model segment's escaped slashes plain ones.
var slashes = strings.NewReplacer("%2F", "/", "%2f", "/")

// isLoopback reports whether a request came from this machine.
func isLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// adminAllowed: loopback callers, or callers presenting the admin token.
func (g *Gateway) adminAllowed(r *http.Request) bool {
	if g.adminToken != "" {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if ok && subtle.ConstantTimeCompare([]byte(tok), []byte(g.adminToken)) == 1 {
			return true
		}
		// The status page alone also takes the token as ?token=, since a
		// browser cannot send a header when it opens a page: the page keeps
		// it in sessionStorage, drops it from the address and sends it as
		// the header on its polls. No other endpoint reads it from a URL.
		if q := r.URL.Query().Get("token"); r.URL.Path == "/sluice/" && q != "" &&
			subtle.ConstantTimeCompare([]byte(q), []byte(g.adminToken)) == 1 {
			return true
		}
	}
	return isLoopback(r)
}

// checkPathChars refuses an upstream path p holding a control character,
// whether or not the dialect reads a model from it (a CR-LF name holding
// a colon names none). A model the path names is checked by the dialect
// (dialect.Request's BadModel), as a body's is.
func checkPathChars(p string) error {
	if i := strings.IndexFunc(p, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(p[i:])
		return fmt.Errorf("sluice: the path holds the character %U, which is not printable; send a plain API path", r)
	}
	return nil
}

// keyDigest is the SHA-256 of a client token, from the token or from its
// "sha256:<hex>" form.
func keyDigest(k string) [sha256.Size]byte {
	var d [sha256.Size]byte
	if hexd, ok := strings.CutPrefix(k, "sha256:"); ok {
		if b, err := hex.DecodeString(hexd); err == nil && len(b) == sha256.Size {
			copy(d[:], b)
			return d
		}
	}
	return sha256.Sum256([]byte(k))
}
