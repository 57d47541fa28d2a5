package dialect

import (
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

	"github.com/sluice-llm/sluice/internal/credential"
	"github.com/sluice-llm/sluice/internal/sse"
)

// What the dialects' Clients share: reading a client's key and setting the
// provider's, and the three shapes of the gateway's own errors (OpenAI's,
// Anthropic's, Google's).

// keyHeaders are KeyHeaders in canonical form, read once.
var keyHeaders = canonical(KeyHeaders())

func canonical(names []string) []string {
	for i, n := range names {
		names[i] = textproto.CanonicalMIMEHeaderKey(n)
	}
	return names
}

// bearer is the scheme of a key sent in Authorization.
const bearer = "Bearer "

// headerKey returns the key h carries in the header name: the token of
// an Authorization: Bearer (the scheme in any case, as RFC 9110 has it),
// else the header's value; "" when none.
func headerKey(h http.Header, name string) string {
	if name == "Authorization" {
		return bearerToken(h.Get(name))
	}
	return h.Get(name)
}

// bearerToken returns the token of an Authorization value of the Bearer
// scheme, written in any case; "" for any other.
func bearerToken(v string) string {
	if len(v) <= len(bearer) || !strings.EqualFold(v[:len(bearer)], bearer) {
		return ""
	}
	return strings.TrimSpace(v[len(bearer):])
}

// clientKey returns the key r carries: in the header own first, the one
// the dialect's SDKs send it in, then in any other dialect's key header
// (a client may speak to the gateway through another SDK); "" when none.
func clientKey(r *http.Request, own string) string {
	if own != "" {
		if k := headerKey(r.Header, own); k != "" {
			return k
		}
	}
	for _, name := range keyHeaders {
		if name == own {
			continue
		}
		if k := headerKey(r.Header, name); k != "" {
			return k
		}
	}
	return ""
}

// setKey drops every credential r carries (every key header, an AWS
// session token, every credential parameter of the query: key,
// access_token, X-Amz-*, ...) and sets key in header, as a bearer token
// in Authorization; nothing is set when key or header is "". r.URL may be
// nil (a header alone); a URL that loses a parameter is a copy, the one r
// had left as it was.
func setKey(r *http.Request, header, key string) {
	for _, name := range keyHeaders {
		delete(r.Header, name)
	}
	delete(r.Header, "X-Amz-Security-Token")
	if r.URL != nil && r.URL.RawQuery != "" {
		u := *r.URL
		credential.DropParams(&u)
		r.URL = &u
	}
	if key == "" || header == "" {
		return
	}
	if header == "Authorization" {
		key = bearer + key
	}
	r.Header.Set(header, key)
}

// queryKey returns the key u's query carries (?key=), "" when none.
func queryKey(u *url.URL) string {
	if u == nil || !strings.Contains(u.RawQuery, "key") && !strings.Contains(u.RawQuery, "%") {
		return ""
	}
	return u.Query().Get("key")
}

// jsonError sets the Content-Type of a JSON error body in h.
func jsonError(h http.Header) {
	if h != nil {
		h.Set("Content-Type", "application/json")
	}
}

// dataEvent is an SSE event of type typ ("" for none) carrying data.
func dataEvent(typ string, data []byte) []byte { return sse.AppendEvent(nil, typ, data) }
