package gateway

import (
	"fmt"
	"net/http"

	"github.com/sluice-llm/sluice"
)

// requestPriority returns the priority a request's Sluice-Priority header
// asks for ("" when it has none, and the policy's stands), or an error
// naming the header's value and the fix.
func requestPriority(r *http.Request) (sluice.Priority, error) {
	v, ok := r.Header["Sluice-Priority"]
	if !ok {
		return "", nil
	}
	switch p := sluice.Priority(v[0]); {
	case len(v) > 1:
		return "", fmt.Errorf("sluice: Sluice-Priority is given %d times; send it once, interactive or batch", len(v))
	case p == sluice.PriorityInteractive || p == sluice.PriorityBatch:
		return p, nil
	default:
		return "", fmt.Errorf("sluice: Sluice-Priority %q is not a priority; send interactive or batch", safeValue(v[0]))
	}
}

// safeValue returns a header value for an error message: at most 64
// bytes, printable ASCII, the rest as '?'.
func safeValue(s string) string {
	b := []byte(s)
	if len(b) > 64 {
		b = b[:64]
	}
	for i, c := range b {
		if c < 0x20 || c > 0x7e {
			b[i] = '?'
		}
	}
	return string(b)
}
