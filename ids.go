package sluice

import (
	"context"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"syscall"
)

// NewRequestID returns a fresh request id: 24 random hex digits. A caller
// that sets it as both X-Request-Id and X-Client-Request-Id saves the
// Transport a copy of the headers.
func NewRequestID() string {
	var b [12]byte
	u, v := rand.Uint64(), rand.Uint32()
	for i := range 8 {
		b[i] = byte(u >> (8 * i))
	}
	for i := range 4 {
		b[8+i] = byte(v >> (8 * i))
	}
	return hex.EncodeToString(b[:])
}

// errorClass names an error for the attempt log: short, stable, and free
// of anything the error text may carry (hosts, keys).
func errorClass(err error) string {
	var te *TimeoutError
	var se *statusError
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &te):
		return "timeout_" + string(te.Phase)
	case errors.Is(err, context.Canceled):
		return "client_cancel"
	case errors.As(err, &se):
		return "error_event_" + statusText(se.status)
	case errors.Is(err, ErrStreamCut):
		return "stream_cut"
	case errors.As(err, &dns):
		return "dns"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connect_refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "eof"
	case errors.As(err, &op) && op.Op == "dial":
		return "connect"
	}
	return "connection"
}

// requestID returns the id a caller gave its request: X-Request-Id, else
// X-Client-Request-Id (the header the OpenAI SDKs set); "" when neither.
func requestID(h http.Header) string {
	if id := get(h, "X-Request-Id"); id != "" {
		return id
	}
	return get(h, "X-Client-Request-Id")
}

// get is h.Get for a key already in canonical form, as every key written
// here is: it skips canonicalizing the key.
func get(h http.Header, canonicalKey string) string {
	if v := h[canonicalKey]; len(v) > 0 {
		return v[0]
	}
	return ""
}
