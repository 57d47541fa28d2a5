package idempotency

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestCheckValue(t *testing.T) {
	tests := []struct {
		v    string
		ok   bool
		rule string
	}{
		{"a", true, ""},
		{"job-2026-12-01 #7 ~!", true, ""},
		{strings.Repeat("k", 255), true, ""},
		{"", false, "empty"},
		{strings.Repeat("k", 256), false, "256 bytes long"},
		{"tab\there", false, "byte 3 is 0x09"},
		{"del\x7f", false, "byte 3 is 0x7f"},
		{"é", false, "byte 0 is 0xc3"},
		{"nl\n", false, "byte 2 is 0x0a"},
	}
	for _, tt := range tests {
		err := CheckValue(tt.v)
		if (err == nil) != tt.ok {
			t.Errorf("CheckValue(%q) = %v, want ok %v", tt.v, err, tt.ok)
			continue
		}
		if err != nil && (!errors.Is(err, ErrInvalidKey) || !strings.Contains(err.Error(), tt.rule)) {
			t.Errorf("CheckValue(%q) = %v, want ErrInvalidKey naming %q", tt.v, err, tt.rule)
		}
	}
}

func TestKeyID(t *testing.T) {
	base := Key{Scope: "openai", Caller: "team", Value: "k"}
	id := base.ID()
	if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("ID %q is not 64 hex digits", id)
	}
	if base.ID() != id {
		t.Fatal("ID is not stable")
	}
	others := []Key{
		{Scope: "openai", Caller: "team", Value: "k2"},
		{Scope: "openai", Caller: "other", Value: "k"},
		{Scope: "anthropic", Caller: "team", Value: "k"},
		{Scope: "openaiteam", Caller: "", Value: "k"},     // fields shifted
		{Scope: "openai", Caller: "teamk", Value: ""},     // fields shifted
		{Scope: "", Caller: "openaiteam", Value: "k"},     // fields shifted
		{Scope: "openai", Caller: "", Value: "team\x00k"}, // a separator smuggled in
	}
	seen := map[string]Key{id: base}
	for _, k := range others {
		if prev, dup := seen[k.ID()]; dup {
			t.Errorf("%+v and %+v share an ID", k, prev)
		}
		seen[k.ID()] = k
	}
}

func TestFingerprint(t *testing.T) {
	body := []byte(`{"model":"m"}`)
	q := func(s string) url.Values { v, _ := url.ParseQuery(s); return v }
	base := Fingerprint("POST", "/v1/models/m:generateContent", q("alt=sse&x=1"), body)
	same := []url.Values{
		q("x=1&alt=sse"),
		q("alt=sse&x=1&key=AIza-secret"),
		q("alt=sse&x=1&api-key=a&API_KEY=b&access_token=c&Key=d"),
	}
	for _, v := range same {
		if Fingerprint("POST", "/v1/models/m:generateContent", v, body) != base {
			t.Errorf("query %v changed the fingerprint", v)
		}
	}
	differ := map[string][32]byte{
		"method": Fingerprint("PUT", "/v1/models/m:generateContent", q("alt=sse&x=1"), body),
		"path":   Fingerprint("POST", "/v1/models/n:generateContent", q("alt=sse&x=1"), body),
		"query":  Fingerprint("POST", "/v1/models/m:generateContent", q("alt=sse&x=2"), body),
		"order":  Fingerprint("POST", "/v1/models/m:generateContent", q("alt=sse&x=1&x=2"), body),
		"body":   Fingerprint("POST", "/v1/models/m:generateContent", q("alt=sse&x=1"), []byte(`{"model":"n"}`)),
		"shift":  Fingerprint("POST", "/v1/models/m:generateContent", q("alt=ssex%3D1"), body),
	}
	if Fingerprint("POST", "/p", q("x=1&x=2"), nil) == Fingerprint("POST", "/p", q("x=2&x=1"), nil) {
		t.Error("the order of one parameter's values does not count")
	}
	for what, fp := range differ {
		if fp == base {
			t.Errorf("another %s, the same fingerprint", what)
		}
	}
}

func TestAnswerRoundTrip(t *testing.T) {
	a := &Answer{
		Status:    201,
		Header:    http.Header{"Content-Type": {"application/json"}, "Content-Language": {"en", "fr"}, "Authorization": {"Bearer x"}},
		Body:      []byte("{\"ok\":true}\x00"),
		Stream:    true,
		RequestID: "req-1",
		CostUSD:   1.5e-7,
		Kept:      time.Unix(1_800_000_000, 123),
	}
	b, _ := a.MarshalBinary()
	var got Answer
	if err := got.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	want := *a
	want.Header = http.Header{"Content-Type": {"application/json"}, "Content-Language": {"en", "fr"}}
	if !reflect.DeepEqual(got.Header, want.Header) || string(got.Body) != string(want.Body) ||
		got.Status != want.Status || got.Stream != want.Stream || got.RequestID != want.RequestID ||
		got.CostUSD != want.CostUSD || !got.Kept.Equal(want.Kept) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	b[len(b)-1] = 'X'
	if string(got.Body) != string(want.Body) {
		t.Error("the decoded answer shares the caller's buffer")
	}
	for n := range len(b) { // every cut is refused, none panics
		if err := new(Answer).UnmarshalBinary(b[:n]); err == nil {
			t.Errorf("a record cut to %d of %d bytes decoded", n, len(b))
		}
	}
}

// TestContentHeaders holds the allowlist: the content headers and their
// values in order, nothing else, copied so that neither the response's
// header nor another kept header can change what is kept.
func TestContentHeaders(t *testing.T) {
	h := http.Header{"Content-Type": {"application/json"}, "Content-Language": {"en", "fr"},
		"Content-Encoding": {"gzip"}, "Authorization": {"Bearer x"}, "Set-Cookie": {"s=1"}, "Content-Length": {"2"},
		"content-type": {"text/plain"}} // not canonical: net/http never makes it, Values never reads it
	got := ContentHeaders(h)
	want := http.Header{"Content-Type": {"application/json"}, "Content-Language": {"en", "fr"}, "Content-Encoding": {"gzip"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ContentHeaders = %v, want %v", got, want)
	}
	h["Content-Language"][0] = "de"
	got["Content-Type"] = append(got["Content-Type"], "text/html") // must not write over the next header's values
	if l := got["Content-Language"]; !reflect.DeepEqual(l, []string{"en", "fr"}) {
		t.Errorf("Content-Language kept as %q after the response's header changed, want [en fr]", l)
	}
	if e := got["Content-Encoding"]; !reflect.DeepEqual(e, []string{"gzip"}) {
		t.Errorf("Content-Encoding kept as %q after a value was added to Content-Type, want [gzip]", e)
	}
	if got := ContentHeaders(http.Header{"Authorization": {"Bearer x"}}); got == nil || len(got) != 0 {
		t.Errorf("ContentHeaders of no content header = %#v, want an empty header", got)
	}
}

func FuzzAnswerUnmarshal(f *testing.F) {
	b, _ := (&Answer{Status: 200, Header: http.Header{"Content-Type": {"a"}}, Body: []byte("x")}).MarshalBinary()
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var a Answer
		if a.UnmarshalBinary(b) != nil {
			return
		}
		again, _ := a.MarshalBinary()
		var c Answer
		if err := c.UnmarshalBinary(again); err != nil || string(c.Body) != string(a.Body) || c.Status != a.Status {
			t.Fatalf("a decoded record does not encode back: %v", err)
		}
	})
}

// TestDigestsStay pins IDs and fingerprints to the values every
// earlier version computed: a store keeps answers under them, on disk or
// in Redis, so an upgrade that changed them would lose every kept answer
// (a duplicate would run, and be billed, again).
func TestDigestsStay(t *testing.T) {
	q, _ := url.ParseQuery("alt=sse&x=1&x=2&key=secret")
	long, _ := url.ParseQuery("q=" + strings.Repeat("v", 600) + "&alt=sse") // past the buffers on the stack
	for _, c := range []struct{ got, want string }{
		{Key{Scope: "/openai", Caller: "c0ffee", Value: "job-1"}.ID(), "bd8aad8e29798c9aa778e5301a393606f1b9f7f77099feddea5d84426051b5b7"},
		{Key{}.ID(), "61d2eb7d68ba9070bc88b21209169baa62c478c0858373375739fc89e69284af"},
		{Key{Scope: "/openai", Caller: "sha256:" + strings.Repeat("ab", 32), Value: strings.Repeat("k", MaxValue)}.ID(), "a7cdf6edeb121022ac8cee0d8267480e6b8012abb14d4fa0e46a7e276c465125"},
		{fmt.Sprintf("%x", Fingerprint("POST", "/v1/models/m:generateContent", q, []byte(`{"model":"m"}`))), "c56105f014831efac74ed872f6bc14373d466b3f5a807ac5dde11b725eb656e0"},
		{fmt.Sprintf("%x", Fingerprint("POST", "/v1/chat/completions", nil, nil)), "8293a99970fd0a4bc55d77d65080be36ad6556978f802291f6a462ae490e8c02"},
		{fmt.Sprintf("%x", Fingerprint("POST", "/v1/models/m:streamGenerateContent", long, []byte(`{}`))), "d635c776262cd85ac18a0bf066c1d302a758e34b914300b4f4c26605568d8111"},
	} {
		if c.got != c.want {
			t.Errorf("digest %s, want %s as before", c.got, c.want)
		}
	}
}

// BenchmarkDigests is what a call with an Idempotency-Key hashes before
// its Begin: its key's ID and its request's fingerprint (a chat body, no
// query).
func BenchmarkDigests(b *testing.B) {
	body := []byte(`{"model":"gpt-4o-mini","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`)
	k := Key{Scope: "/openai", Caller: strings.Repeat("c0ffee", 10), Value: "job-12345"}
	b.ReportAllocs()
	for b.Loop() {
		_ = k.ID()
		_ = Fingerprint("POST", "/openai/v1/chat/completions", nil, body)
	}
}
