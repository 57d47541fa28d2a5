package sluice

import (
	"math"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"
)

func TestAppendTS(t *testing.T) {
	for _, ts := range []time.Time{
		time.Date(2026, 11, 30, 21, 4, 5, 678_901_234, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", -7*3600)),
		time.Date(999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 1_000_000, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		{},
		time.Unix(0, 0),
	} {
		got := string(appendTS(nil, ts))
		want := ts.UTC().Format(tsLayout)
		if got != want {
			t.Errorf("appendTS(%v) = %q, want %q", ts, got, want)
		}
	}
}

func FuzzAppendFloat(f *testing.F) {
	for _, v := range []float64{0, 0.0004, 0.0005, 1, 12.345, 12.3456, 0.1, 0.12, 999.9995, 1e9 - 0.0001, 1e9, 1e12, -0.0001, -3.5} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v float64) {
		want := "0"
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			want = strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64)
		}
		if got := string(appendFloat(nil, v)); got != want {
			t.Errorf("appendFloat(%v) = %s, want %s", v, got, want)
		}
	})
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "gpt-4o-mini", "a\"b\\c", "<&>", "\x00\x1f\x7f", "\u2028\u2029", "\xff\xfe", "é☃\n\r\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendString(nil, s)), string(appendStringByBytes(nil, s)); got != want {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}

// appendStringByBytes is appendString as it was first written, byte by
// byte: the reference the table-driven one must match.
func appendStringByBytes(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
