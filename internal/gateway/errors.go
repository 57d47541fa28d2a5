package gateway

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-llm/sluice/dialect"
)

// The type/code of the errors the gateway answers itself.
const (
	codeTimeout          = "timeout"                 // 504
	codeProviderDown     = "provider_down"           // 503, breaker open
	codeUnreachable      = "upstream_unreachable"    // 502
	codeBudgetExhausted  = "budget_exhausted"        // 429 spent; 503 the state store failed
	codeTooLarge         = "request_too_large"       // 413
	codeUnauthorized     = "unauthorized"            // 401
	codeBadRequest       = "invalid_request"         // 400
	codeNotFound         = "not_found"               // 404
	codeStreamStalled    = "stream_stalled"          // in a stream
	codeStreamCut        = "stream_cut"              // in a stream
	codeShuttingDown     = "shutting_down"           // in a stream, at the end of the drain
	codeMethodNotAllowed = "method_not_allowed"      // 405
	codeUnpricedModel    = "unpriced_model"          // 400, no price under a budget
	codeStateUnavailable = "state_unavailable"       // 503, admin endpoints: the state store failed
	codeKeyInProgress    = "idempotency_in_progress" // 409, a call with the same Idempotency-Key is in flight
	codeKeyReused        = "idempotency_key_reused"  // 422, the Idempotency-Key came with another request
	codeCredentials      = "upstream_credentials"    // 502, a signing provider's credentials cannot be had
)

// writeError answers a request with a gateway-made error, in the shape
// of the dialect d.
func writeError(w http.ResponseWriter, d dialect.Dialect, status int, code, message string) {
	h := w.Header()
	b := d.Client().Error(h, status, code, message)
	h.Set("X-Should-Retry", "false")
	w.WriteHeader(status)
	w.Write(b)
}

// retryAfterSeconds is the Retry-After value for a breaker that may close
// at until: whole seconds, at least 1.
func retryAfterSeconds(until, now time.Time) string {
	d := until.Sub(now)
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}

// plural returns n and noun, with an s unless n is 1: "1 attempt",
// "3 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
