package credential

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

var names = NewNames("Authorization", "x-api-key", "api-key", "x-goog-api-key", "Sluice-Key")

func caller(h http.Header, query string) string {
	return names.Caller(h, &url.URL{Path: "/v1/chat/completions", RawQuery: query})
}

// TestCallersApart checks that requests carrying different credentials,
// in any of the forms a client may send one, are different callers, and
// that only a request with no credential at all is anonymous.
func TestCallersApart(t *testing.T) {
	forms := []struct {
		name  string
		h     func(secret string) http.Header
		query func(secret string) string
	}{
		{"Bearer", func(s string) http.Header { return http.Header{"Authorization": {"Bearer " + s}} }, nil},
		{"bearer", func(s string) http.Header { return http.Header{"Authorization": {"bearer " + s}} }, nil},
		{"Basic", func(s string) http.Header { return http.Header{"Authorization": {"Basic " + s}} }, nil},
		{"custom scheme", func(s string) http.Header { return http.Header{"Authorization": {"Token " + s}} }, nil},
		{"bare", func(s string) http.Header { return http.Header{"Authorization": {s}} }, nil},
		{"x-api-key", func(s string) http.Header { return http.Header{"X-Api-Key": {s}} }, nil},
		{"api-key", func(s string) http.Header { return http.Header{"Api-Key": {s}} }, nil},
		{"x-goog-api-key", func(s string) http.Header { return http.Header{"X-Goog-Api-Key": {s}} }, nil},
		{"cookie", func(s string) http.Header { return http.Header{"Cookie": {"session=" + s}} }, nil},
		{"team + Bearer", func(s string) http.Header {
			return http.Header{"Sluice-Key": {"team"}, "Authorization": {"Bearer " + s}}
		}, nil},
		{"?key", nil, func(s string) string { return "key=" + s }},
		{"?access_token", nil, func(s string) string { return "alt=sse&access_token=" + s }},
		{"SigV4", func(s string) http.Header {
			return http.Header{"Authorization": {"AWS4-HMAC-SHA256 Credential=" + s + "/20261206/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=00"}}
		}, nil},
	}
	seen := map[string]string{}
	for _, f := range forms {
		var a, b string
		for i, secret := range []string{"sk-alice", "sk-mallory"} {
			h, q := http.Header{}, ""
			if f.h != nil {
				h = f.h(secret)
			}
			if f.query != nil {
				q = f.query(secret)
			}
			c := caller(h, q)
			if c == "" {
				t.Errorf("%s: a request with a credential is anonymous", f.name)
			}
			if i == 0 {
				a = c
			} else {
				b = c
			}
			if other, ok := seen[c]; ok && f.name != "bearer" { // Bearer's, on purpose
				t.Errorf("%s with %s is the same caller as %s", f.name, secret, other)
			}
			seen[c] = f.name + " " + secret
		}
		if a == b {
			t.Errorf("%s: two credentials, one caller", f.name)
		}
	}
	if c := caller(http.Header{"Content-Type": {"application/json"}}, "alt=sse"); c != "" {
		t.Errorf("no credential: caller %q, want anonymous", c)
	}
}

// TestCallerStable checks what does not make another caller: the scheme's
// case, a SigV4 signature's date and signature, a presigned URL's.
func TestCallerStable(t *testing.T) {
	same := [][2]http.Header{
		{{"Authorization": {"Bearer sk-a"}}, {"Authorization": {"bearer sk-a"}}},
		{{"Authorization": {"Bearer sk-a"}}, {"Authorization": {"BEARER  sk-a "}}},
		{
			{"Authorization": {"AWS4-HMAC-SHA256 Credential=AKIDA/20261206/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=aa"}},
			{"Authorization": {"AWS4-HMAC-SHA256 Credential=AKIDA/20261207/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=bb"}},
		},
	}
	for _, p := range same {
		if a, b := caller(p[0], ""), caller(p[1], ""); a != b {
			t.Errorf("%v and %v: two callers", p[0], p[1])
		}
	}
	a := caller(nil, "X-Amz-Credential=AKIDA%2F20261206&X-Amz-Signature=aa&X-Amz-Date=1")
	b := caller(nil, "X-Amz-Credential=AKIDA%2F20261207&X-Amz-Signature=bb&X-Amz-Date=2")
	if a != b || a == "" {
		t.Errorf("a presigned URL's caller changed with its signature: %q, %q", a, b)
	}
	if caller(http.Header{"X-Amz-Security-Token": {"s1"}}, "") == caller(http.Header{"X-Amz-Security-Token": {"s2"}}, "") {
		t.Error("two session tokens, one caller")
	}
}

func TestIsParam(t *testing.T) {
	for _, n := range []string{"key", "KEY", "access_token", "api-key", "token", "sig", "X-Amz-Signature", "x-amz-credential", "X-AMZ-SECURITY-TOKEN"} {
		if !IsParam(n) {
			t.Errorf("IsParam(%q) = false", n)
		}
	}
	for _, n := range []string{"alt", "api-version", "monkey", "keys", "amz"} {
		if IsParam(n) {
			t.Errorf("IsParam(%q) = true", n)
		}
	}
}

func TestDropParams(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"key=a", ""},
		{"alt=sse&key=a", "alt=sse"},
		{"k%65y=a&alt=sse", "alt=sse"},
		{"monkey=1&key=a&key=b", "monkey=1"},
		{"alt=sse&access_token=ya29.x&api-version=1", "alt=sse&api-version=1"},
		{"X-Amz-Signature=1&X-Amz-Credential=2&alt=sse", "alt=sse"},
		{"alt=sse", "alt=sse"},
		{"", ""},
	} {
		u := &url.URL{RawQuery: tt.in}
		DropParams(u)
		if u.RawQuery != tt.want {
			t.Errorf("DropParams(%q) = %q, want %q", tt.in, u.RawQuery, tt.want)
		}
	}
}

func TestSecretsIn(t *testing.T) {
	h := http.Header{
		"Authorization": {"Basic " + "dXNlcjpodW50ZXIyLXBhc3N3b3Jk"}, // user:hunter2-password
		"Cookie":        {"session=s3ss10n-value-xyz; theme=dark"},
		"Sluice-Key":    {`team"quoted-key`},
		"X-Api-Key":     {"short"},
	}
	s := names.Secrets(h, &url.URL{RawQuery: "access_token=ya29.CLIENT-OWN-TOKEN&alt=sse"})
	for _, body := range []string{
		`{"echo":"Basic dXNlcjpodW50ZXIyLXBhc3N3b3Jk"}`,
		`{"echo":"dXNlcjpodW50ZXIyLXBhc3N3b3Jk"}`,
		`{"password":"hunter2-password"}`,
		`{"cookie":"s3ss10n-value-xyz"}`,
		`{"key":"team\"quoted-key"}`,
		`data: {"q":"ya29.CLIENT-OWN-TOKEN"}`,
	} {
		if !s.In([]byte(body)) {
			t.Errorf("Secrets.In(%s) = false", body)
		}
	}
	for _, body := range []string{`{"content":"dark short sse"}`, `{"content":"hello"}`} {
		if s.In([]byte(body)) {
			t.Errorf("Secrets.In(%s) = true: a short value or a parameter's name is no secret", body)
		}
	}
}

// FuzzCallersApart checks, over any two credentials in any header or
// query parameter a credential travels in and any Authorization scheme,
// that two requests whose credentials differ are two callers, and that a
// request with a credential is never the anonymous caller.
func FuzzCallersApart(f *testing.F) {
	f.Add(uint8(0), "Bearer", "sk-alice", "sk-mallory", "team")
	f.Add(uint8(1), "bearer", "a", "b", "")
	f.Add(uint8(2), "Basic", "dXNlcjpwYXNz", "dXNlcjpwYXNzMg==", "k")
	f.Add(uint8(6), "", "x", "y", "")
	f.Fuzz(func(t *testing.T, where uint8, scheme, x, y, team string) {
		trim := func(s string) string { return strings.TrimSpace(s) }
		if trim(x) == trim(y) || trim(x) == "" || trim(y) == "" || strings.ContainsAny(x+y+scheme+team, "\r\n\x00") {
			return
		}
		build := func(secret string) *http.Request {
			r := &http.Request{Header: http.Header{}, URL: &url.URL{Path: "/v1/messages"}}
			if team != "" {
				r.Header.Set("Sluice-Key", team)
			}
			switch where % 7 {
			case 0:
				r.Header.Set("Authorization", secret)
			case 1:
				r.Header.Set("Authorization", scheme+" "+secret)
			case 2:
				r.Header.Set("X-Api-Key", secret)
			case 3:
				r.Header.Set("X-Goog-Api-Key", secret)
			case 4:
				r.URL.RawQuery = url.Values{"key": {secret}}.Encode()
			case 5:
				r.URL.RawQuery = url.Values{"access_token": {secret}, "alt": {"sse"}}.Encode()
			case 6:
				r.Header.Set("Cookie", secret)
			}
			return r
		}
		a, b := build(x), build(y)
		ca, cb := names.Caller(a.Header, a.URL), names.Caller(b.Header, b.URL)
		if ca == "" || cb == "" {
			t.Fatalf("a request with a credential is anonymous: %v %v / %v %v", a.Header, a.URL, b.Header, b.URL)
		}
		// A SigV4 Authorization names its caller by its access key id
		// alone: two that share one are one caller on purpose.
		if where%7 <= 1 && strings.HasPrefix(strings.ToLower(trim(scheme+" "+x)), "aws4-hmac-sha256") {
			return
		}
		if where%7 == 1 && trim(scheme) == "" {
			return // "  x" and "x" are one value
		}
		if ca == cb {
			t.Fatalf("two credentials %q and %q (form %d, scheme %q) share caller %s", x, y, where%7, scheme, ca)
		}
	})
}

// TestCallerDigestStays pins callers to the digests every earlier version
// computed: answers are kept, and budgets and limits counted, under them,
// so a change would make every caller another.
func TestCallerDigestStays(t *testing.T) {
	n := NewNames("Authorization", "X-Api-Key")
	for _, c := range []struct {
		h     http.Header
		query string
		want  string
	}{
		{http.Header{"Authorization": {"Bearer sk-abc123456789"}, "X-Api-Key": {" key-2 ", "key-3"}, "Cookie": {"s=1"}},
			"key=AIza123&x=1&X-Amz-Credential=AKID/2026/us/s3&X-Amz-Signature=zz",
			"sha256:a362f7e4c708de5fdb4d343448228fbe10463080be1fc752bbdbcb7f975b0671"},
		{http.Header{"Authorization": {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260101/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=abc"}},
			"", "sha256:9a015a71c286c781d30f21c9cabf59c5b404a3785fafa73ebc34a549067eb29e"},
		{http.Header{"Authorization": {"Bearer " + strings.Repeat("j", 2000)}}, "", // longer than a stack buffer
			"sha256:7fd5491abe7a1002ac11200edef40d113d9bb3e632f077c169a8d70289fdb0b9"},
		{http.Header{}, "", ""},
	} {
		if got := n.Caller(c.h, &url.URL{Path: "/v1", RawQuery: c.query}); got != c.want {
			t.Errorf("caller %q, want %q as before", got, c.want)
		}
	}
}

// BenchmarkCaller names the caller of a request with an API key, as a
// call with an Idempotency-Key (or a budget or limit per key) does.
func BenchmarkCaller(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		names.Caller(benchHeader, benchURL)
	}
}

// benchHeader and benchURL are the benchmarks' request: an OpenAI API
// key, as the SDK sends it, and no query.
var (
	benchHeader = http.Header{"Authorization": {"Bearer sk-proj-" + strings.Repeat("x", 40)}}
	benchURL    = &url.URL{Path: "/v1/chat/completions"}
)

// TestJSONPlain holds jsonPlain to encoding/json: a value it calls plain
// is written as it is in a JSON string, so its JSON form need not be
// looked for apart. Every byte is tried, alone and within a key.
func TestJSONPlain(t *testing.T) {
	for c := range 256 {
		for _, v := range []string{string(rune(c)), "sk-proj-" + string([]byte{byte(c)}) + "xyz"} {
			q, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			if plain := string(q[1:len(q)-1]) == v; jsonPlain(v) && !plain {
				t.Errorf("jsonPlain(%q) = true, but encoding/json writes it %s", v, q)
			}
		}
	}
	if !jsonPlain("sk-proj-" + strings.Repeat("x", 40)) {
		t.Error("jsonPlain of a plain key = false, want true")
	}
}

// BenchmarkSecrets collects what a request with an API key carries, as a
// call with an Idempotency-Key does to look for it in its answer.
func BenchmarkSecrets(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		names.Secrets(benchHeader, benchURL)
	}
}
