package scrub

import (
	"net/http"
	"strings"
	"testing"
)

func TestBodyCatchesKeysSplitAcrossChunks(t *testing.T) {
	s := New("sk-injected-1234", "sk-other-99", "", "sk-injected-1234")
	if len(s.keys) != 2 {
		t.Fatalf("%d keys, want the 2 distinct non-empty ones", len(s.keys))
	}
	in := `{"error":"Bearer sk-injected-1234 and sk-other-99, sk-other-9 sk-injected-123","k":"sk-injected-1234sk-other-99"}`
	want := `{"error":"Bearer [redacted] and [redacted], sk-other-9 sk-injected-123","k":"[redacted][redacted]"}`
	for size := 1; size <= len(in); size++ {
		sc := s.Body()
		var out []byte
		for i := 0; i < len(in); i += size {
			end := min(i+size, len(in))
			out = append(out, sc.Scrub([]byte(in[i:end]), end == len(in))...)
		}
		if string(out) != want {
			t.Fatalf("chunks of %d: %s\nwant %s", size, out, want)
		}
	}
	if New("", "") != nil {
		t.Error("no keys should give a nil set")
	}
}

func TestBodyHoldsOnlyWhatMayBeginAKey(t *testing.T) {
	sc := New("sk-injected-1234").Body()
	if got := sc.Scrub([]byte("data: {\"x\":1}\n\n"), false); string(got) != "data: {\"x\":1}\n\n" {
		t.Errorf("an event end was held back: %q", got)
	}
	if got := sc.Scrub([]byte("data: sk-inj"), false); string(got) != "data: " {
		t.Errorf("a key's start was not held back: %q", got)
	}
	if got := sc.Scrub([]byte("ected-1234\n\n"), false); string(got) != "[redacted]\n\n" {
		t.Errorf("a split key was not scrubbed: %q", got)
	}
}

func TestHeader(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer sk-injected-1234"}, "X-Echo": {"a sk-other-99 b", "none"}}
	New("sk-injected-1234", "sk-other-99").Header(h)
	if got := h.Get("Authorization"); got != "Bearer [redacted]" {
		t.Errorf("Authorization %q", got)
	}
	if got := h["X-Echo"]; got[0] != "a [redacted] b" || got[1] != "none" {
		t.Errorf("X-Echo %q", got)
	}
	var none *Keys
	none.Header(h) // a nil set scrubs nothing, and does not panic
}

func BenchmarkScrub32KiB(b *testing.B) {
	sc := New("sk-injected-1234", "sk-ant-api03-abcdefghijklmnop").Body()
	chunk := []byte(strings.Repeat(`data: {"choices":[{"delta":{"content":"some text"}}]}`+"\n\n", 600))[:32<<10]
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		sc.Scrub(chunk, false)
	}
}
