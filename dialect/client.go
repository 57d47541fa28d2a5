package dialect

import (
	"encoding/json"
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

// openAIErrorBody is a gateway error in OpenAI's shape:
// {"error":{"message":…,"type":code,"code":code,"param":null}}.
func openAIErrorBody(code, message string) []byte {
	msg, _ := json.Marshal(message) // a string always marshals
	b := make([]byte, 0, len(msg)+2*len(code)+64)
	b = append(b, `{"error":{"message":`...)
	b = append(b, msg...)
	b = append(b, `,"type":"`...)
	b = append(b, code...)
	b = append(b, `","code":"`...)
	b = append(b, code...)
	return append(b, `","param":null}}`...)
}

// anthropicErrorBody is a gateway error in Anthropic's shape:
// {"type":"error","error":{"type":code,"message":…}}.
func anthropicErrorBody(code, message string) []byte {
	msg, _ := json.Marshal(message)
	b := make([]byte, 0, len(msg)+len(code)+64)
	b = append(b, `{"type":"error","error":{"type":"`...)
	b = append(b, code...)
	b = append(b, `","message":`...)
	b = append(b, msg...)
	return append(b, "}}"...)
}

// googleStatuses are the google.rpc status names of the HTTP statuses the
// gateway answers with.
var googleStatuses = map[int]string{
	http.StatusBadRequest:            "INVALID_ARGUMENT",
	http.StatusUnauthorized:          "UNAUTHENTICATED",
	http.StatusNotFound:              "NOT_FOUND",
	http.StatusMethodNotAllowed:      "INVALID_ARGUMENT",
	http.StatusRequestEntityTooLarge: "INVALID_ARGUMENT",
	http.StatusTooManyRequests:       "RESOURCE_EXHAUSTED",
	http.StatusBadGateway:            "UNAVAILABLE",
	http.StatusServiceUnavailable:    "UNAVAILABLE",
	http.StatusGatewayTimeout:        "DEADLINE_EXCEEDED",
}

// googleErrorBody is a gateway error in Google's shape:
// {"error":{"code":503,"message":…,"status":"UNAVAILABLE","details":[
// {"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":code,"domain":"sluice"}]}}.
// The gateway's code is the ErrorInfo's reason, where Google's clients
// look for a machine-readable cause.
func googleErrorBody(status int, code, message string) []byte {
	name := googleStatuses[status]
	if name == "" {
		name = "INTERNAL"
		if status < 500 {
			name = "INVALID_ARGUMENT"
		}
	}
	type errorInfo struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	}
	var v struct {
		Error struct {
			Code    int         `json:"code"`
			Message string      `json:"message"`
			Status  string      `json:"status"`
			Details []errorInfo `json:"details"`
		} `json:"error"`
	}
	v.Error.Code, v.Error.Message, v.Error.Status = status, message, name
	v.Error.Details = []errorInfo{{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: code, Domain: "sluice"}}
	b, _ := json.Marshal(v) // plain strings and ints always marshal
	return b
}

// The gateway's codes that end a stream for want of time: the stream
// stalled, or the call ran past a limit.
const (
	codeStreamStalled = "stream_stalled"
	codeTimeout       = "timeout"
)

// googleStreamStatus is the HTTP status of the error event that ends a
// stream the gateway cannot finish, by its code: Google's SDKs raise an
// event's error only when its code is an HTTP error status.
func googleStreamStatus(code string) int {
	if code == codeStreamStalled || code == codeTimeout {
		return http.StatusGatewayTimeout
	}
	return http.StatusServiceUnavailable // cut, shutting down
}

// dataEvent is an SSE event of type typ ("" for none) carrying data.
func dataEvent(typ string, data []byte) []byte { return sse.AppendEvent(nil, typ, data) }
