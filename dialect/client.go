package dialect

import (
	"net/http"
	"net/textproto"
	"net/url"
	"strings"

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
// an Authorization: Bearer, else the header's value; "" when none.
func headerKey(h http.Header, name string) string {
	if name == "Authorization" {
		t, ok := strings.CutPrefix(h.Get(name), bearer)
		if !ok {
			return ""
		}
		return t
	}
	return h.Get(name)
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

// setKey drops every credential r carries (every key header, a key in
// the query) and sets key in header, as a bearer token in Authorization;
// nothing is set when key or header is "". r.URL may be nil (a header
// alone).
func setKey(r *http.Request, header, key string) {
	for _, name := range keyHeaders {
		delete(r.Header, name)
	}
	if r.URL != nil {
		dropQueryKey(r.URL)
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
	if u == nil || !mayHoldKey(u.RawQuery) {
		return ""
	}
	return u.Query().Get("key")
}

// mayHoldKey reports whether a raw query may hold a key parameter: it
// names key, or escapes a character (k%65y).
func mayHoldKey(q string) bool {
	return strings.Contains(q, "key") || strings.Contains(q, "%")
}

// dropQueryKey removes the key parameter from u's query, keeping the
// others (alt=sse, api-version) as they came.
func dropQueryKey(u *url.URL) {
	if !mayHoldKey(u.RawQuery) {
		return
	}
	var kept []string
	for p := range strings.SplitSeq(u.RawQuery, "&") {
		name, _, _ := strings.Cut(p, "=")
		if n, err := url.QueryUnescape(name); err == nil && n == "key" || name == "key" {
			continue
		}
		kept = append(kept, p)
	}
	u.RawQuery = strings.Join(kept, "&")
}

// jsonError sets the Content-Type of a JSON error body in h.
func jsonError(h http.Header) {
	if h != nil {
		h.Set("Content-Type", "application/json")
	}
}

// dataEvent is an SSE event of type typ ("" for none) carrying data.
func dataEvent(typ string, data []byte) []byte { return sse.AppendEvent(nil, typ, data) }
