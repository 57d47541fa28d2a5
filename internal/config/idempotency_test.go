package config

import (
	"strings"
	"testing"
	"time"
)

func TestIdempotencyParsed(t *testing.T) {
	c, err := Parse([]byte("idempotency: {ttl: 48h, max_answer: 1MiB, max_bytes: 64MiB, finish_on_disconnect: false}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Idempotency{Enabled: true, TTL: 48 * time.Hour, MaxAnswer: 1 << 20, MaxBytes: 64 << 20}
	if c.Idempotency != want {
		t.Errorf("got %+v, want %+v", c.Idempotency, want)
	}
	if d, want := Default().Idempotency, (Idempotency{Enabled: true, TTL: 24 * time.Hour, MaxAnswer: 8 << 20, MaxBytes: 512 << 20, FinishOnDisconnect: true}); d != want {
		t.Errorf("defaults %+v", d)
	}
}

func TestIdempotencyRefused(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"idempotency: {ttl: 0s}\n", "idempotency.ttl: 0s: give a positive duration"},
		{"idempotency: {max_answer: 0}\n", "idempotency.max_answer:"},
		{"idempotency: {max_answer: 8MiB, max_bytes: 1MiB}\n", "idempotency.max_bytes: 1048576 is less than max_answer"},
		{"idempotency: {ttl: soon}\n", "idempotency.ttl:"},
		{"idempotency: {tll: 1h}\n", "idempotency.tll: unknown key"},
	} {
		_, err := Parse([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v, want one line with %q", tc.src, err, tc.want)
		}
	}
}
