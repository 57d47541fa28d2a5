// Package awssign signs Bedrock Runtime requests with AWS Signature
// Version 4 and the standard AWS credential chain, through aws-sdk-go-v2:
// the Signer of dialect.Bedrock, which carries no plain key. It is apart
// from package dialect so that a program that does not call Bedrock does
// not compile the AWS SDK; the gateway builds one per Bedrock provider,
// and a library user sets it as the Transport's Signer:
//
//	s, err := awssign.New(dialect.SignerOptions{Region: "us-east-1"})
//	...
//	client := &http.Client{Transport: &sluice.Transport{Dialect: dialect.Bedrock, Signer: s}}
package awssign

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/sluice-llm/sluice/dialect"
)

// service is Bedrock Runtime's SigV4 signing name.
const service = "bedrock"

// sigv4Headers are the headers of a SigV4 signature besides
// Authorization, a client's dropped before the request is signed anew.
var sigv4Headers = [...]string{"X-Amz-Security-Token", "X-Amz-Date", "X-Amz-Content-Sha256"}

// New returns a SigV4 signer with the standard AWS credential chain, as
// aws-sdk-go-v2's config.LoadDefaultConfig resolves it: the environment
// (AWS_ACCESS_KEY_ID, …), the shared config and credentials files
// (AWS_PROFILE), web identity, SSO, a credential process, then the
// container's or the instance's metadata (off with
// AWS_EC2_METADATA_DISABLED=true); the credentials are cached and renewed
// before they expire. The region is o.Region, else the chain's
// (AWS_REGION, the profile's), else the one the request's host names
// (bedrock-runtime.us-east-1.amazonaws.com). o.CredentialsFile, if set,
// is read instead of the shared credentials file; o.Client makes the
// requests of credential endpoints (STS), and cannot be given with
// AWS_CA_BUNDLE, which the chain applies to a client of its own. The
// chain reads the process's environment: o.Getenv is not used.
func New(o dialect.SignerOptions) (dialect.Signer, error) {
	var opts []func(*config.LoadOptions) error
	if o.Region != "" {
		opts = append(opts, config.WithRegion(o.Region))
	}
	if o.CredentialsFile != "" {
		opts = append(opts, config.WithSharedCredentialsFiles([]string{o.CredentialsFile}))
	}
	if o.Client != nil {
		opts = append(opts, config.WithHTTPClient(o.Client))
	}
	cfg, err := config.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("sluice: bedrock: the AWS configuration: %w", err)
	}
	if cfg.Credentials == nil {
		return nil, fmt.Errorf("sluice: bedrock: no AWS credential provider")
	}
	return &bedrockSigner{creds: cfg.Credentials, region: cfg.Region, v4: v4.NewSigner()}, nil
}

// Region returns the region the standard AWS chain names, as
// aws-sdk-go-v2's config.LoadDefaultConfig reads it: AWS_REGION, else
// AWS_DEFAULT_REGION, else the region of the shared config file's profile
// (AWS_CONFIG_FILE, AWS_PROFILE); "" when none names one. It fails when
// the AWS configuration cannot be read (AWS_PROFILE names no profile).
func Region() (string, error) {
	cfg, err := config.LoadDefaultConfig(context.Background())
	if err != nil {
		return "", fmt.Errorf("the AWS configuration: %w", err)
	}
	return cfg.Region, nil
}

// bedrockSigner signs Bedrock requests with SigV4.
type bedrockSigner struct {
	creds  aws.CredentialsProvider
	region string
	v4     *v4.Signer
}

// Sign signs r for its host and path as they will be sent, with
// body's SHA-256: it sets Authorization, X-Amz-Date and, for temporary
// credentials, X-Amz-Security-Token. It signs the host, Content-Type and
// the X-Amz- and X-Amzn-Bedrock- headers. A Bedrock model path is sent
// escaped as the AWS SDKs escape it (dialect.BedrockEscapedPath),
// whatever its URL.RawPath.
func (s *bedrockSigner) Sign(r *http.Request, body []byte) error {
	creds, err := s.creds.Retrieve(r.Context())
	if err != nil {
		return fmt.Errorf("sluice: bedrock: AWS credentials: %w", err)
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	region := s.region
	if region == "" {
		if region = hostRegion(host); region == "" {
			return fmt.Errorf("sluice: bedrock: no AWS region: set the provider's region or AWS_REGION")
		}
	}
	u := *r.URL
	if raw := dialect.BedrockEscapedPath(u.Path); raw != "" {
		u.RawPath = raw
	}
	r.URL = &u
	for _, h := range sigv4Headers {
		r.Header.Del(h)
	}
	su := u // the signer rewrites its request's query
	sr := &http.Request{Method: r.Method, URL: &su, Host: r.Host, Header: http.Header{}, ContentLength: int64(len(body))}
	for k, v := range r.Header {
		if k == "Content-Type" || strings.HasPrefix(k, "X-Amz-") || strings.HasPrefix(k, "X-Amzn-Bedrock-") {
			sr.Header[k] = v
		}
	}
	sum := sha256.Sum256(body)
	if err := s.v4.SignHTTP(r.Context(), creds, sr, hex.EncodeToString(sum[:]), service, region, time.Now()); err != nil {
		return fmt.Errorf("sluice: bedrock: signing: %w", err)
	}
	for _, h := range [...]string{"Authorization", "X-Amz-Date", "X-Amz-Security-Token"} {
		if v := sr.Header.Get(h); v != "" {
			r.Header.Set(h, v)
		} else {
			r.Header.Del(h)
		}
	}
	return nil
}

// hostRegion returns the region a Bedrock Runtime host names, the label
// after bedrock-runtime (or bedrock-runtime-fips); "" when none.
func hostRegion(host string) string {
	labels := strings.Split(host, ".")
	for i, l := range labels[:len(labels)-1] {
		if strings.HasPrefix(l, "bedrock-runtime") {
			return labels[i+1]
		}
	}
	return ""
}
