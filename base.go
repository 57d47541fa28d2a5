package sluice

import (
	"net/http"
	"time"
)

// NewBase returns the http.Transport that a Transport makes for itself when
// its Base is nil: dials and TLS handshakes bounded by connect, enough idle
// connections per host for a busy gateway. Give one to several Transports
// as their Base to share its connections between them.
func NewBase(connect time.Duration) *http.Transport { return newBase(connect) }
