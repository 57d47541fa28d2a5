package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sort"

	"github.com/sluice-llm/sluice/internal/credential"
)

// MaxValue is the longest Idempotency-Key value accepted, in bytes.
const MaxValue = 255

// ErrInvalidKey is the error of CheckValue, wrapped with the rule broken.
var ErrInvalidKey = errors.New("idempotency: invalid Idempotency-Key")

// CheckValue reports whether v may be an Idempotency-Key: 1 to MaxValue
// bytes of printable ASCII (space to '~'). Its error wraps ErrInvalidKey
// and names the rule broken.
func CheckValue(v string) error {
	if v == "" {
		return fmt.Errorf("%w: empty, want 1 to %d bytes of printable ASCII", ErrInvalidKey, MaxValue)
	}
	if len(v) > MaxValue {
		return fmt.Errorf("%w: %d bytes long, want at most %d", ErrInvalidKey, len(v), MaxValue)
	}
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' || c > '~' {
			return fmt.Errorf("%w: byte %d is %#02x, want printable ASCII (0x20 to 0x7e)", ErrInvalidKey, i, c)
		}
	}
	return nil
}

// Key is the identity of a remembered request.
type Key struct {
	// Scope is the gateway's route, or the library's provider.
	Scope string
	// Caller is who asked, named by a digest of every credential the
	// request carried (every Authorization value whatever its scheme,
	// every API's key header, credential query parameters), never by a
	// credential itself; "" is the one anonymous caller, a request with
	// no credential at all. Another caller with the same Value is another
	// Key.
	Caller string
	// Value is the client's Idempotency-Key, checked by CheckValue.
	Value string
}

// ID returns the name a store keeps k under: the SHA-256, in 64 lowercase
// hex digits, of its three fields, each prefixed by its length, so no two
// different keys share an ID and the ID is safe as a file or Redis name
// whatever the fields hold.
func (k Key) ID() string {
	var buf [256]byte // most keys: hashed without a heap allocation
	b := append(buf[:0], "sluice-idempotency-key\x00"...)
	b = appendField(appendField(appendField(b, k.Scope), k.Caller), k.Value)
	sum := sha256.Sum256(b)
	var id [64]byte
	hex.Encode(id[:], sum[:])
	return string(id[:])
}

// appendField appends s to b after its length, so that fields cannot run
// into one another.
func appendField(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

// IsCredentialParam reports whether the query parameter name (any case)
// carries a credential — a key or token (key, api-key, access_token,
// token, ...), a signature, any X-Amz-* parameter of a presigned AWS URL —
// and so is left out of a Fingerprint: a rotated key still replays, and
// no credential is ever hashed into what is kept.
func IsCredentialParam(name string) bool { return credential.IsParam(name) }

// Fingerprint returns the SHA-256 of a request's method, path, query
// without its credential parameters (IsCredentialParam), and body: what
// must match for a kept answer to be replayed. The query's parameters
// are taken sorted by name, each name's values in order.
func Fingerprint(method, path string, query url.Values, body []byte) [32]byte {
	var buf [512]byte // what comes before the body, in one write
	b := append(buf[:0], "sluice-idempotency-fingerprint\x00"...)
	b = appendField(appendField(b, method), path)
	var names []string
	for name := range query {
		if !IsCredentialParam(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	b = binary.AppendUvarint(b, uint64(len(names)))
	for _, name := range names {
		b = appendField(b, name)
		vs := query[name]
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendField(b, v)
		}
	}
	b = binary.AppendUvarint(b, uint64(len(body)))
	h := sha256.New()
	h.Write(b)
	h.Write(body)
	var fp [32]byte
	h.Sum(fp[:0])
	return fp
}
