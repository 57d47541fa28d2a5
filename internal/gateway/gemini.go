package gateway

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/sluice-llm/sluice/internal/sse"
)

// Google's Gemini API in the gateway: its error shape, its key header and
// the key a client may give in the query (?key=).

// geminiStatuses are the google.rpc status names of the HTTP statuses the
// gateway answers with.
var geminiStatuses = map[int]string{
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

// geminiStreamStatus is the HTTP status an error event that ends a stream
// stands for, by its code: Google's SDKs raise an event's error only when
// its code is an HTTP error status.
func geminiStreamStatus(code string) int {
	if code == codeStreamStalled || code == codeTimeout {
		return http.StatusGatewayTimeout
	}
	return http.StatusServiceUnavailable // cut, shutting down
}

// geminiErrorBody returns a gateway error in Google's shape:
// {"error":{"code":503,"message":…,"status":"UNAVAILABLE","details":[
// {"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"provider_down","domain":"sluice"}]}}.
// The gateway's own code is the ErrorInfo's reason, where Google's clients
// look for a machine-readable cause.
func geminiErrorBody(status int, code, message string) []byte {
	name := geminiStatuses[status]
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

// geminiErrorEvent is the data event that ends a Gemini stream the
// gateway cannot finish: Google's error object, which the SDKs raise.
func geminiErrorEvent(code, message string) []byte {
	return sse.AppendEvent(nil, "", geminiErrorBody(geminiStreamStatus(code), code, message))
}

// geminiQueryKey returns the API key a Gemini client sends in the query
// (?key=), "" when none.
func geminiQueryKey(u *url.URL) string {
	if !strings.Contains(u.RawQuery, "key=") {
		return ""
	}
	return u.Query().Get("key")
}

// dropQueryKey removes the key parameter from a Gemini request's query,
// keeping the others (alt=sse) as they came.
func dropQueryKey(u *url.URL) {
	if !strings.Contains(u.RawQuery, "key=") {
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
