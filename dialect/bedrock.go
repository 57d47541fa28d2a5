package dialect

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/smithy-go/encoding/httpbinding"

	"github.com/sluice-llm/sluice/internal/request"
)

// Bedrock is AWS Bedrock Runtime, signed with SigV4 (Signer):
//
//   - the model is in the URL path, one escaped segment (%3A for ":", %2F
//     for an ARN's "/"): POST /model/{modelId}/converse, /converse-stream,
//     /invoke and /invoke-with-response-stream (InvokeModel with
//     Anthropic's messages body), and a fallback's model goes there;
//   - the operation says whether the answer streams, and a stream is AWS
//     event-stream frames (application/vnd.amazon.eventstream), whole at
//     its terminal event: ConverseStream's metadata (after messageStop),
//     InvokeModelWithResponseStream's chunk holding Anthropic's
//     message_stop (or, for any model, Bedrock's invocation metrics);
//   - its errors name their type in x-amzn-ErrorType
//     (ThrottlingException:http://internal.amazon.com/…) with a body
//     {"message":…}; in a stream, an exception frame
//     (throttlingException, …) stands for its status;
//     ServiceQuotaExceededException is a used-up quota;
//   - it sends no rate-limit header; its usage is Converse's usage
//     (inputTokens, without the cached tokens) or Anthropic's.
var Bedrock Dialect = bedrock{}

type bedrock struct{}

func (bedrock) Kind() string { return "bedrock" }

// The Bedrock Runtime operations a model path ends in.
const (
	bedrockConverse       = "converse"
	bedrockConverseStream = "converse-stream"
	bedrockInvoke         = "invoke"
	bedrockInvokeStream   = "invoke-with-response-stream"
)

// bedrockModelDir comes before a Bedrock Runtime path's model.
const bedrockModelDir = "/model/"

// bedrockPath returns where the model lies in p, a Bedrock Runtime path
// ({prefix}/model/{modelId}/{operation}), and the operation; start is -1
// when p is no such path. p may be escaped, the model then as written
// (anthropic.claude-3-5-sonnet-20240620-v1%3A0), or decoded, as a Go
// server's URL.Path gives it, an ARN's "/" then in the model.
func bedrockPath(p string) (start, end int, op string) {
	i := strings.Index(p, bedrockModelDir)
	j := strings.LastIndexByte(p, '/')
	if i < 0 || j <= i+len(bedrockModelDir) {
		return -1, -1, ""
	}
	switch op = p[j+1:]; op {
	case bedrockConverse, bedrockConverseStream, bedrockInvoke, bedrockInvokeStream:
		return i + len(bedrockModelDir), j, op
	}
	return -1, -1, ""
}

// bedrockModel returns the model a path's model segment names, unescaped
// when it is escaped (no model id holds a "%").
func bedrockModel(seg string) (string, error) {
	if !strings.Contains(seg, "%") {
		return seg, nil
	}
	m, err := url.PathUnescape(seg)
	if err != nil {
		return "", &request.ModelError{Problem: "is not a valid escaped path segment"}
	}
	return m, nil
}

func (bedrock) owns(p string) bool {
	start, _, _ := bedrockPath(p)
	return start >= 0
}

// Request reads a Bedrock Runtime path's model and operation, and the
// body's output limit: Converse's inferenceConfig.maxTokens, else
// Anthropic's max_tokens. Any other path is read as a body that names its
// model (Bedrock's OpenAI-compatible API).
func (bedrock) Request(path string, body []byte) Request {
	start, end, op := bedrockPath(path)
	if start < 0 {
		return bodyRequest(path, body)
	}
	r := Request{ModelCall: true, Stream: op == bedrockConverseStream || op == bedrockInvokeStream, Operation: "chat"}
	f, err := request.Scan(body)
	if errors.Is(err, request.ErrAmbiguous) {
		r.Ambiguous = err
	} else {
		r.Ambiguous = request.Unique(body, "inferenceConfig")
	}
	r.MaxTokens = f.MaxTokens
	request.Walk(body, func(k, v []byte) bool {
		if !request.KeyIs(k, "inferenceConfig") {
			return true
		}
		if err := request.Unique(v, "maxTokens"); err != nil && r.Ambiguous == nil {
			r.Ambiguous = err
		}
		if n, ok := request.Int(v, "maxTokens"); ok && n > 0 {
			r.MaxTokens = n
		}
		return false
	})
	m, err := bedrockModel(path[start:end])
	if err == nil {
		err = request.CheckModel(m)
	}
	if err != nil {
		r.BadModel = err
	} else {
		r.Model = m
	}
	return r
}

// Retarget puts model in the path, escaped when the path's model is. A
// decoded path gets the model as it is, "/" and all: the Signer sends it
// escaped.
func (bedrock) Retarget(path string, body []byte, model string) (string, []byte, bool) {
	start, end, _ := bedrockPath(path)
	if start < 0 {
		return bodyRetarget(path, body, model)
	}
	if strings.Contains(path[start:end], "%") {
		model = httpbinding.EscapePath(model, true)
	}
	return path[:start] + model + path[end:], body, true
}

// bedrockErrorType returns the type of a Bedrock error: x-amzn-ErrorType
// up to its ":", else the body's __type (com.amazon.coral…#Name) or code.
func bedrockErrorType(h http.Header, body []byte) string {
	if t := h.Get("X-Amzn-Errortype"); t != "" {
		t, _, _ = strings.Cut(t, ":")
		return strings.TrimSpace(t)
	}
	if !bytes.Contains(body, []byte(`"__type"`)) && !bytes.Contains(body, []byte(`"code"`)) {
		return ""
	}
	var e struct {
		Type string `json:"__type"`
		Code string `json:"code"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	t := e.Type
	if t == "" {
		t = e.Code
	}
	if i := strings.LastIndexByte(t, '#'); i >= 0 {
		t = t[i+1:]
	}
	t, _, _ = strings.Cut(t, ":")
	return t
}

// Judge reads a Bedrock error's type: ServiceQuotaExceededException is a
// used-up quota. The statuses of the others say the rest:
// ThrottlingException (429) is a rate limit, ServiceUnavailableException
// (503) and ModelNotReadyException (429) pass with time and are retried,
// ValidationException (400) and AccessDeniedException (403) never are.
func (bedrock) Judge(status int, h http.Header, body []byte) Judgment {
	return Judgment{Quota: bedrockErrorType(h, body) == bedrockQuota}
}

func (bedrock) Stream(h http.Header) Stream {
	if isAWSEventStream(h) {
		return &bedrockStream{}
	}
	return newSSEStream(h, classifyEvent)
}

// Usage reads Converse's usage, else InvokeModel's answer, Anthropic's.
func (bedrock) Usage(body []byte) (Usage, bool) {
	if u, ok := readConverseUsage(body); ok {
		return u, true
	}
	return Anthropic.Usage(body)
}

func (bedrock) StreamUsage() UsageReader {
	return &bedrockUsage{anthropic: Anthropic.StreamUsage()}
}

// Windows calls nothing: Bedrock sends no rate-limit header.
func (bedrock) Windows(h http.Header, now time.Time, fn func(Window)) {}

func (bedrock) Traits() Traits {
	return Traits{System: "aws.bedrock", StrictEnd: true}
}

func (bedrock) Client() Client { return bedrockClient{} }

// bedrockClient is Bedrock as the gateway speaks it to an AWS SDK whose
// endpoint is the gateway (BaseEndpoint, endpoint_url). The SDK signs
// with the client's own credentials, which the gateway does not check:
// their access key id is the client's token, and the gateway signs
// upstream with its own.
type bedrockClient struct{}

// Key returns the access key id of the client's SigV4 Authorization
// (Credential=AKID/date/region/bedrock/aws4_request), or the token of a
// Bedrock API key (Authorization: Bearer …); "" when none.
func (bedrockClient) Key(r *http.Request) string {
	a := r.Header.Get("Authorization")
	if t := bearerToken(a); t != "" {
		return t
	}
	rest, ok := strings.CutPrefix(a, "AWS4-HMAC-SHA256 ")
	if !ok {
		return ""
	}
	_, cred, ok := strings.Cut(rest, "Credential=")
	if !ok {
		return ""
	}
	if i := strings.IndexAny(cred, "/, "); i >= 0 {
		cred = cred[:i]
	}
	return cred
}

// awsCredentialHeaders are the headers of a client's SigV4 signature
// besides Authorization.
var awsCredentialHeaders = [...]string{"X-Amz-Security-Token", "X-Amz-Date", "X-Amz-Content-Sha256"}

// SetKey drops the client's signature and every dialect's key header,
// and a presigned URL's or Gemini's credentials in the query; the Signer
// signs the request upstream. A key, for a provider that has one, is a
// Bedrock API key: it goes as a bearer token.
func (bedrockClient) SetKey(r *http.Request, key string) {
	for _, h := range awsCredentialHeaders {
		r.Header.Del(h)
	}
	setKey(r, "Authorization", key)
}

// bedrockErrorName returns the error type Bedrock gives with a status.
func bedrockErrorName(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "ThrottlingException"
	case http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	case http.StatusUnauthorized, http.StatusForbidden:
		return "AccessDeniedException"
	case http.StatusNotFound:
		return "ResourceNotFoundException"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "ModelTimeoutException"
	}
	if status < 500 {
		return "ValidationException"
	}
	return "InternalServerException"
}

// bedrockMessage is Bedrock's error body, with the gateway's own code in
// reason for the errors it makes (the AWS SDKs read the type from
// x-amzn-ErrorType and the message, and leave other members alone).
type bedrockMessage struct {
	Message string `json:"message"`
	Reason  string `json:"reason,omitempty"`
}

// Error returns {"message":…,"reason":code} with x-amzn-ErrorType naming
// the type Bedrock gives with status, which the AWS SDKs raise as that
// type (types.ThrottlingException, …).
func (bedrockClient) Error(h http.Header, status int, code, message string) []byte {
	h.Set("Content-Type", "application/json")
	h.Set("X-Amzn-Errortype", bedrockErrorName(status))
	b, _ := json.Marshal(bedrockMessage{message, code}) // strings always marshal
	return b
}

// AsksUsage is false: Bedrock's streams carry their usage unasked.
func (bedrockClient) AsksUsage(r *http.Request) bool { return false }

// EscapedModel returns where the model lies in p, an escaped Bedrock
// Runtime model path: a model ARN (inference profiles, provisioned
// throughput, imported models) comes with its "/" as %2F; start is -1
// for any other path.
func (bedrockClient) EscapedModel(p string) (start, end int) {
	start, end, _ = bedrockPath(p)
	return start, end
}

// bedrockService is Bedrock Runtime's SigV4 signing name.
const bedrockService = "bedrock"

// Signer returns a SigV4 signer with the standard AWS credential chain, as
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
func (bedrock) Signer(o SignerOptions) (Signer, error) {
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

// BedrockRegion returns the region the standard AWS chain names, as
// aws-sdk-go-v2's config.LoadDefaultConfig reads it: AWS_REGION, else
// AWS_DEFAULT_REGION, else the region of the shared config file's profile
// (AWS_CONFIG_FILE, AWS_PROFILE); "" when none names one. It fails when
// the AWS configuration cannot be read (AWS_PROFILE names no profile).
func BedrockRegion() (string, error) {
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
// escaped as the AWS SDKs escape it, whatever its URL.RawPath.
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
	if raw := bedrockRawPath(u.Path); raw != "" {
		u.RawPath = raw
	}
	r.URL = &u
	for _, h := range awsCredentialHeaders {
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
	if err := s.v4.SignHTTP(r.Context(), creds, sr, hex.EncodeToString(sum[:]), bedrockService, region, time.Now()); err != nil {
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

// bedrockRawPath returns the escaped form of p, a decoded URL path, in
// which a Bedrock model path's model is escaped as the AWS SDKs escape it
// (":" as %3A, "/" as %2F); "" for any other path.
func bedrockRawPath(p string) string {
	start, end, _ := bedrockPath(p)
	if start < 0 {
		return ""
	}
	esc := func(s string) string { return (&url.URL{Path: s}).EscapedPath() }
	return esc(p[:start]) + httpbinding.EscapePath(p[start:end], true) + esc(p[end:])
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
