package dialect

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/internal/request"
)

// Bedrock is AWS Bedrock Runtime, signed with SigV4 (its Signer is
// awssign.New, in package dialect/awssign):
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

// address: Bedrock Runtime's endpoint in region.
func (bedrock) address(region string) (string, bool) {
	return "https://bedrock-runtime." + region + ".amazonaws.com", true
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
		model = escapeSegment(model)
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
	return Traits{System: "aws.bedrock", StrictEnd: true, Signs: true}
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

// BedrockEscapedPath returns p, a decoded URL path, escaped as the AWS
// SDKs send a Bedrock Runtime model path: its model escaped as one
// segment (":" as %3A, "/" as %2F), the rest as url.URL escapes a path;
// "" for a path that is no Bedrock model path. A SigV4 signer sends it as
// the request's URL.RawPath, since the signature covers the path as sent.
func BedrockEscapedPath(p string) string {
	start, end, _ := bedrockPath(p)
	if start < 0 {
		return ""
	}
	esc := func(s string) string { return (&url.URL{Path: s}).EscapedPath() }
	return esc(p[:start]) + escapeSegment(p[start:end]) + esc(p[end:])
}

// escapeSegment escapes s as the AWS SDKs escape a path label: every byte
// but the unreserved (letters, digits, "-", ".", "_", "~") as %XX, "/"
// too.
func escapeSegment(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		}
	}
	return b.String()
}
