// Package credential knows where an HTTP request carries credentials —
// the headers that hold a key, a token or a signature, and the query
// parameters that do — so that a caller is named by all of them, a
// provider that is not theirs is sent none of them, and nothing kept
// holds one.
package credential

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
)

// params are the query parameters that carry a credential, lower-cased:
// the keys and tokens of the APIs Sluice speaks (Gemini's key, Azure's
// api-key, OAuth's access_token, ...) and signatures.
var params = map[string]bool{
	"key": true, "api-key": true, "api_key": true, "apikey": true, "x-api-key": true,
	"access_token": true, "token": true, "auth": true, "authorization": true,
	"x-goog-api-key": true, "sig": true, "signature": true, "code": true,
}

// awsParam is the prefix of a presigned AWS URL's parameters
// (X-Amz-Credential, X-Amz-Signature, X-Amz-Security-Token, ...), in
// lower case.
const awsParam = "x-amz-"

// IsParam reports whether the query parameter name (any case) carries a
// credential: a key or token (key, api-key, access_token, token, ...), a
// signature (sig, signature), or any X-Amz-* parameter of a presigned AWS
// URL.
func IsParam(name string) bool {
	n := strings.ToLower(name)
	return params[n] || strings.HasPrefix(n, awsParam)
}

// DropParams removes every credential parameter (IsParam) from u's query,
// keeping the others as they came, in their order and escaping.
func DropParams(u *url.URL) {
	if u.RawQuery == "" {
		return
	}
	var kept []string
	dropped := false
	for p := range strings.SplitSeq(u.RawQuery, "&") {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); IsParam(name) || err == nil && IsParam(n) {
			dropped = true
			continue
		}
		kept = append(kept, p)
	}
	if dropped {
		u.RawQuery = strings.Join(kept, "&")
	}
}

// alwaysHeaders are the headers that may carry a credential in any
// request, whatever the API: a session's cookie, an AWS session token.
var alwaysHeaders = []string{"Cookie", "X-Amz-Security-Token"}

// headers returns keyHeaders and alwaysHeaders, canonical, each once.
func headers(keyHeaders []string) []string {
	out := make([]string, 0, len(keyHeaders)+len(alwaysHeaders))
	for _, n := range slices.Concat(keyHeaders, alwaysHeaders) {
		if n = textproto.CanonicalMIMEHeaderKey(n); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// Names is the set of headers a request's credentials are looked for
// in. Make it once with NewNames; it is safe for concurrent use.
type Names struct{ headers []string }

// NewNames returns the Names of keyHeaders (Authorization, every
// dialect's key header, a gateway's own token header) and of the headers
// any request may carry a credential in (Cookie, X-Amz-Security-Token).
func NewNames(keyHeaders ...string) Names { return Names{headers: headers(keyHeaders)} }

// Caller returns the caller named by every credential h and u carry: ""
// when they carry none, else "sha256:" and the hex SHA-256 of them all —
// every value of every header of n, and every credential query parameter
// (IsParam) — so that two requests with different credentials are two
// callers, and the credentials themselves are never kept. An
// Authorization scheme is compared in any case (Bearer, bearer); of an
// AWS SigV4 signature, which changes with every request, only the access
// key id counts, as of a presigned URL's parameters.
func (n Names) Caller(h http.Header, u *url.URL) string {
	var buf [512]byte // most requests' credentials: hashed without a heap allocation
	b := buf[:0]
	n.each(h, u, func(name, value string) {
		if len(b) == 0 {
			b = append(b, "sluice-caller\x00"...)
		}
		b = appendField(appendField(b, name), value)
	})
	if len(b) == 0 {
		return ""
	}
	sum := sha256.Sum256(b)
	var id [len("sha256:") + 64]byte
	copy(id[:], "sha256:")
	hex.Encode(id[len("sha256:"):], sum[:])
	return string(id[:])
}

// each calls fn with every credential h and u carry, as it names the
// caller: the header's or parameter's name, and its value made stable.
func (n Names) each(h http.Header, u *url.URL, fn func(name, value string)) {
	for _, name := range n.headers {
		for _, v := range h[name] {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			if name == "Authorization" {
				v = authorization(v)
			}
			fn(name, v)
		}
	}
	if u == nil || u.RawQuery == "" {
		return
	}
	q := u.Query()
	names := make([]string, 0, len(q))
	for name := range q {
		if IsParam(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		lower := lowerASCII(name)
		for _, v := range q[name] {
			switch lower {
			case "x-amz-credential":
				v, _, _ = strings.Cut(v, "/")
			case "x-amz-signature", "x-amz-date", "x-amz-expires", "x-amz-signedheaders", "x-amz-algorithm", "x-amz-content-sha256":
				continue // the signature's, not the credential's
			}
			fn("?"+lower, v)
		}
	}
}

// authorization returns an Authorization value as it names a caller: the
// scheme in lower case (RFC 9110 compares it in any case), then its
// credentials; of an AWS SigV4 signature, the access key id alone. A
// value of one word (a bare key) is kept as it is.
func authorization(v string) string {
	scheme, rest, ok := strings.Cut(v, " ")
	if !ok {
		return v // a bare key, no scheme: its case counts
	}
	scheme = lowerASCII(scheme)
	rest = strings.TrimSpace(rest)
	if scheme == "aws4-hmac-sha256" {
		_, cred, _ := strings.Cut(rest, "Credential=")
		if i := strings.IndexAny(cred, "/, "); i >= 0 {
			cred = cred[:i]
		}
		rest = cred
	}
	return scheme + " " + rest
}

// lowerASCII returns s with its ASCII letters in lower case and every
// other byte as it was (strings.ToLower would make any invalid UTF-8 one
// replacement character, so two schemes one).
func lowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// appendField appends s to b after its length, so that fields cannot run
// into one another.
func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// MinSecret is the length, in bytes, below which a credential value is
// not looked for in a body (Secrets.In): a value that short is found by
// chance in any text.
const MinSecret = 8

// Secrets are the credential values a request carried, to look for in
// what would be kept of its answer.
type Secrets struct{ values [][]byte }

// Secrets returns the credential values h and u carry, as they could be
// echoed back: each header value whole, an Authorization's credentials
// without the scheme (and a Basic one decoded), each cookie's value, each
// credential query parameter's value; and the JSON string form of each
// that JSON escapes. Values shorter than MinSecret are left out.
func (n Names) Secrets(h http.Header, u *url.URL) Secrets {
	var s Secrets
	add := func(v string) {
		if len(v) < MinSecret || slices.ContainsFunc(s.values, func(b []byte) bool { return string(b) == v }) {
			return
		}
		s.values = append(s.values, []byte(v))
		if !jsonPlain(v) {
			if q, err := json.Marshal(v); err == nil && string(q[1:len(q)-1]) != v {
				s.values = append(s.values, q[1:len(q)-1])
			}
		}
	}
	for _, name := range n.headers {
		for _, v := range h[name] {
			add(v)
			switch name {
			case "Authorization":
				scheme, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
				cred = strings.TrimSpace(cred)
				add(cred)
				if strings.EqualFold(scheme, "basic") {
					if b, err := base64.StdEncoding.DecodeString(cred); err == nil {
						add(string(b))
						if _, pass, ok := strings.Cut(string(b), ":"); ok {
							add(pass)
						}
					}
				}
			case "Cookie":
				for _, c := range strings.Split(v, ";") {
					_, val, _ := strings.Cut(c, "=")
					add(strings.TrimSpace(val))
				}
			}
		}
	}
	if u != nil && u.RawQuery != "" {
		for name, vs := range u.Query() {
			if IsParam(name) {
				for _, v := range vs {
					add(v)
				}
			}
		}
	}
	return s
}

// jsonPlain reports whether v is printable ASCII that encoding/json
// writes as it is in a string: none of '"', '\\', '<', '>' or '&'. A key
// almost always is, and then has no JSON form of its own to look for.
func jsonPlain(v string) bool {
	for i := 0; i < len(v); i++ {
		switch c := v[i]; {
		case c < ' ' || c > '~', c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// In reports whether b holds any of the values of s.
func (s Secrets) In(b []byte) bool {
	for _, v := range s.values {
		if bytes.Contains(b, v) {
			return true
		}
	}
	return false
}
