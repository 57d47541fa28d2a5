package fake

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// AWSCredentials are what the Bedrock endpoints check a request's SigV4
// signature against: the one access key they know, its secret, an
// optional session token and the region a signature must be scoped to.
type AWSCredentials struct {
	// AccessKeyID is the access key a request must be signed with. If
	// empty, DefaultAWS's.
	AccessKeyID string
	// SecretAccessKey is its secret. If empty, DefaultAWS's.
	SecretAccessKey string
	// SessionToken, if not empty, must be the request's
	// X-Amz-Security-Token, as temporary credentials send it. If empty,
	// any session token (or none) is accepted, but it is still signed.
	SessionToken string
	// Region is the region a signature must be scoped to. If empty,
	// DefaultAWS's.
	Region string
}

// DefaultAWS are the credentials a Provider checks Bedrock signatures
// against when Provider.AWS leaves a field empty. They are no real AWS
// credentials.
var DefaultAWS = AWSCredentials{
	AccessKeyID:     "AKIAFAKESLUICE000001",
	SecretAccessKey: "fakeSluiceSecretAccessKeyForTestsOnly0001",
	Region:          "us-east-1",
}

// bedrockService is the signing name of Bedrock Runtime.
const bedrockService = "bedrock"

// signatureSkew is how far a request's X-Amz-Date may be from the
// Provider's clock, as AWS allows.
const signatureSkew = 15 * time.Minute

// awsCredentials returns the Provider's credentials, DefaultAWS's filling
// in what it leaves empty.
func (p *Provider) awsCredentials() AWSCredentials {
	a := p.AWS
	a.AccessKeyID = cmp.Or(a.AccessKeyID, DefaultAWS.AccessKeyID)
	a.SecretAccessKey = cmp.Or(a.SecretAccessKey, DefaultAWS.SecretAccessKey)
	a.Region = cmp.Or(a.Region, DefaultAWS.Region)
	return a
}

// checkSigned reports whether a Bedrock request is signed with the
// Provider's AWS credentials; if not, it answers 403 in Bedrock's shape
// and counts the refusal.
func (p *Provider) checkSigned(w http.ResponseWriter, r *http.Request, body []byte) bool {
	e := checkSigV4(r, body, p.awsCredentials(), p.now())
	if e == nil {
		return true
	}
	p.auth.mu.Lock()
	p.auth.refused++
	p.auth.mu.Unlock()
	w.Header().Set("x-amzn-ErrorType", e.typ)
	w.Header().Set("x-amzn-RequestId", "req_"+rand.Text())
	writeJSON(w, http.StatusForbidden, marshal(bedrockErr{e.message}))
	return false
}

// sigV4Error is why a request's signature was refused: the error type
// Bedrock names in x-amzn-ErrorType, and its message.
type sigV4Error struct {
	typ, message string
}

// authorization is an Authorization header of AWS4-HMAC-SHA256.
type authorization struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

// parseAuthorization reads an AWS4-HMAC-SHA256 Authorization header.
func parseAuthorization(h string) (authorization, bool) {
	rest, ok := strings.CutPrefix(h, "AWS4-HMAC-SHA256 ")
	if !ok {
		return authorization{}, false
	}
	var a authorization
	for part := range strings.SplitSeq(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return authorization{}, false
			}
			a.accessKey, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signedHeaders = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	if a.accessKey == "" || a.signature == "" || len(a.signedHeaders) == 0 {
		return authorization{}, false
	}
	return a, true
}

// checkSigV4 checks a Bedrock request's SigV4 signature against creds at
// now: it signs the request again with aws-sdk-go-v2's signer, from the
// headers the request says it signed and the body as received, and
// compares the two signatures. It returns nil for a request signed with
// creds, else why not.
func checkSigV4(r *http.Request, body []byte, creds AWSCredentials, now time.Time) *sigV4Error {
	h := r.Header.Get("Authorization")
	if h == "" {
		return &sigV4Error{"MissingAuthenticationTokenException", "Missing Authentication Token"}
	}
	a, ok := parseAuthorization(h)
	if !ok {
		return &sigV4Error{"IncompleteSignatureException",
			"Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters."}
	}
	if a.accessKey != creds.AccessKeyID {
		return &sigV4Error{"UnrecognizedClientException", "The security token included in the request is invalid."}
	}
	if creds.SessionToken != "" && r.Header.Get("X-Amz-Security-Token") != creds.SessionToken {
		return &sigV4Error{"UnrecognizedClientException", "The security token included in the request is invalid."}
	}
	at, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	switch {
	case err != nil:
		return &sigV4Error{"IncompleteSignatureException", "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."}
	case at.Format("20060102") != a.date || a.service != bedrockService || a.region != creds.Region:
		return &sigV4Error{"InvalidSignatureException", "Credential should be scoped to a valid region, service and date: " +
			creds.Region + "/" + bedrockService + "."}
	case at.Sub(now) > signatureSkew || now.Sub(at) > signatureSkew:
		return &sigV4Error{"InvalidSignatureException", "Signature expired: " + r.Header.Get("X-Amz-Date") +
			" is now earlier or later than the time allowed (15 minutes)."}
	}
	want, err := resign(r, body, a, creds, at)
	if err != nil || !hmac.Equal([]byte(want), []byte(h)) {
		return &sigV4Error{"InvalidSignatureException", "The request signature we calculated does not match the " +
			"signature you provided. Check your AWS Secret Access Key and signing method. " +
			"Consult the service documentation for details."}
	}
	return nil
}

// resign returns the Authorization header aws-sdk-go-v2's signer gives a
// copy of r that holds only the headers a says were signed, with body's
// hash and the signing time at.
func resign(r *http.Request, body []byte, a authorization, creds AWSCredentials, at time.Time) (string, error) {
	u := *r.URL
	u.Scheme, u.Host = "http", r.Host
	req := &http.Request{Method: r.Method, URL: &u, Host: r.Host, Header: http.Header{}}
	for _, name := range a.signedHeaders {
		switch name {
		case "host":
		case "content-length":
			req.ContentLength = int64(len(body))
		default:
			if v, ok := r.Header[http.CanonicalHeaderKey(name)]; ok {
				req.Header[http.CanonicalHeaderKey(name)] = v
			}
		}
	}
	sum := sha256.Sum256(body)
	c := aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey,
		SessionToken: r.Header.Get("X-Amz-Security-Token")}
	err := v4.NewSigner().SignHTTP(context.Background(), c, req, hex.EncodeToString(sum[:]), a.service, a.region, at)
	return req.Header.Get("Authorization"), err
}
