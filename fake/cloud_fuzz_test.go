package fake

import (
	"testing"
	"time"
)

// FuzzParseAuthorization: any Authorization header parses or is refused
// without a panic, and a parsed one names a key, a signature and signed
// headers.
func FuzzParseAuthorization(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKID/20261202/us-east-1/bedrock/aws4_request, " +
		"SignedHeaders=content-length;content-type;host;x-amz-date, Signature=abc123")
	f.Add("AWS4-HMAC-SHA256 Credential=/, SignedHeaders=, Signature=")
	f.Add("Bearer x")
	f.Fuzz(func(t *testing.T, h string) {
		a, ok := parseAuthorization(h)
		if ok && (a.accessKey == "" || a.signature == "" || len(a.signedHeaders) == 0) {
			t.Errorf("%q parsed to %+v", h, a)
		}
	})
}

// FuzzVerifyAssertion: no assertion a fuzzer makes up gets a token.
func FuzzVerifyAssertion(f *testing.F) {
	f.Add("eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJhQGIifQ.c2ln")
	f.Add("a.b.c")
	f.Add("..")
	a, err := (&Provider{}).NewServiceAccount("http://127.0.0.1/token")
	if err != nil {
		f.Fatal(err)
	}
	g := &authState{accounts: map[string]*ServiceAccount{a.Email: a}}
	f.Fuzz(func(t *testing.T, assertion string) {
		if g.verifyLocked(assertion, time.Now()) == "" {
			t.Errorf("made-up assertion %q verified", assertion)
		}
	})
}
