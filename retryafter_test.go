package sluice

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
		ok     bool
	}{
		{"none", nil, 0, false},
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{"seconds padded", map[string]string{"Retry-After": " 7 "}, 7 * time.Second, true},
		{"zero", map[string]string{"Retry-After": "0"}, 0, true},
		{"fraction", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond, true},
		{"negative", map[string]string{"Retry-After": "-3"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "soon"}, 0, false},
		{"http date", map[string]string{"Retry-After": "Mon, 30 Nov 2026 12:00:03 GMT"}, 3 * time.Second, true},
		{"date in the past", map[string]string{"Retry-After": "Mon, 30 Nov 2026 11:00:00 GMT"}, 0, true},
		{"ms wins", map[string]string{"Retry-After-Ms": "1500", "Retry-After": "9"}, 1500 * time.Millisecond, true},
		{"bad ms falls back", map[string]string{"Retry-After-Ms": "x", "Retry-After": "9"}, 9 * time.Second, true},
		{"huge", map[string]string{"Retry-After": "99999999999999"}, 0, false},
	}
	for _, tt := range tests {
		h := http.Header{}
		for k, v := range tt.header {
			h.Set(k, v)
		}
		got, ok := retryAfter(h, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("%s: got %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"2", "1.5", "Mon, 30 Nov 2026 12:00:03 GMT", "-1", "", "1e308"} {
		f.Add(s, s)
	}
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, ra, ms string) {
		h := http.Header{"Retry-After": {ra}, "Retry-After-Ms": {ms}}
		d, ok := retryAfter(h, now)
		if d < 0 {
			t.Fatalf("negative wait %v for %q / %q", d, ra, ms)
		}
		if !ok && d != 0 {
			t.Fatalf("no hint but wait %v", d)
		}
	})
}
