package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
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
	h := sha256.New()
	h.Write([]byte("sluice-idempotency-key\x00"))
	field(h, k.Scope)
	field(h, k.Caller)
	field(h, k.Value)
	return hex.EncodeToString(h.Sum(nil))
}

// field writes s to h after its length, so that fields cannot run into
// one another.
func field(h hash.Hash, s string) {
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
	h.Write([]byte(s))
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
	h := sha256.New()
	h.Write([]byte("sluice-idempotency-fingerprint\x00"))
	field(h, method)
	field(h, path)
	names := make([]string, 0, len(query))
	for name := range query {
		if !IsCredentialParam(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(names)))])
	for _, name := range names {
		field(h, name)
		vs := query[name]
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(vs)))])
		for _, v := range vs {
			field(h, v)
		}
	}
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(body)))])
	h.Write(body)
	var fp [32]byte
	h.Sum(fp[:0])
	return fp
}
