package gateway

import (
	"crypto/sha256"
	"encoding/hex"
)

func sha256Hex(s string) string {
	d := sha256.Sum256([]byte(s))
	return hex.EncodeToString(d[:])
}
