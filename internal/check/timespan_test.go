package check

import (
	"errors"
	"testing"
	"time"
)

func TestParseSpan(t *testing.T) {
	const s, m, h, d = time.Second, time.Minute, time.Hour, 24 * time.Hour
	tests := []struct {
		in      string
		want    time.Duration
		wantErr error
	}{
		{"90", 90 * s, nil},
		{"5", 5 * s, nil},
		{"0", 0, nil},
		{"1min 30s", 90 * s, nil},
		{"1min30s", 90 * s, nil},
		{"1h30m", 90 * m, nil},
		{"1h 30min", 90 * m, nil},
		{"2.5s", 2500 * time.Millisecond, nil},
		{"1.5min", 90 * s, nil},
		{".5s", 500 * time.Millisecond, nil},
		{"500ms", 500 * time.Millisecond, nil},
		{"500msec", 500 * time.Millisecond, nil},
		{"10us", 10 * time.Microsecond, nil},
		{"10usec", 10 * time.Microsecond, nil},
		{"7µs", 7 * time.Microsecond, nil},
		{"7μs", 7 * time.Microsecond, nil},
		{"0.1234567s", 123456 * time.Microsecond, nil}, // systemd keeps microseconds
		{"2 hours", 2 * h, nil},
		{"3hr", 3 * h, nil},
		{"1d", d, nil},
		{"2 days", 2 * d, nil},
		{"1w", 7 * d, nil},
		{"2weeks", 14 * d, nil},
		{"1M", 2629800 * s, nil},
		{"1month", 2629800 * s, nil},
		{"1y", 31557600 * s, nil},
		{"1 year", 31557600 * s, nil},
		{"5 s", 5 * s, nil},
		{"1min 30 s", 90 * s, nil},
		{"5min5", 305 * s, nil}, // a number with no unit is seconds
		{"1 2", 3 * s, nil},
		{"+5s", 5 * s, nil},
		{"  45s  ", 45 * s, nil},
		{"infinity", infinity, nil},
		{" infinity ", infinity, nil},
		{"500y", infinity, nil}, // past a time.Duration
		{"", 0, errSpanEmpty},
		{"   ", 0, errSpanEmpty},
		{"infinity x", 0, errSpanSyntax},
		{"infinite", 0, errSpanSyntax},
		{"30x", 0, errSpanSyntax},
		{"1 min 30x", 0, errSpanSyntax},
		{"s", 0, errSpanSyntax},
		{"1.2.3", 0, errSpanSyntax},
		{"3.", 0, errSpanSyntax},
		{"3.s", 0, errSpanSyntax},
		{"3. 1", 0, errSpanSyntax},
		{"+-1", 0, errSpanSyntax},
		{"1S", 0, errSpanSyntax}, // units are case-sensitive: M is month, S nothing
		{"1,5s", 0, errSpanSyntax},
		{"-5s", 0, errSpanNegative},
		{"5s -1s", 0, errSpanNegative},
		{"99999999999999999999", 0, errSpanRange},
		{"1000000y", 0, errSpanRange},
	}
	for _, tt := range tests {
		got, err := parseSpan(tt.in)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("parseSpan(%q) = %v, %v; want %v, %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFmtDur(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{500 * time.Millisecond, "500ms"},
		{2500 * time.Millisecond, "2.5s"},
		{30 * time.Second, "30s"},
		{119 * time.Second, "1m59s"},
		{600 * time.Second, "10m"},
		{1178 * time.Second, "19m38s"},
		{90 * time.Minute, "1h30m"},
		{infinity, "infinity"},
	}
	for _, tt := range tests {
		got := fmtDur(tt.in)
		if got != tt.want {
			t.Errorf("fmtDur(%v) = %q, want %q", tt.in, got, tt.want)
		}
		// What fmtDur writes, systemd reads back as the same span.
		if back, err := parseSpan(got); err != nil || back != tt.in {
			t.Errorf("parseSpan(fmtDur(%v)) = %v, %v", tt.in, back, err)
		}
	}
}
