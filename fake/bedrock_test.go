package fake

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// bedrockModel is a Bedrock model id with the ":" and "." real ids have.
const bedrockModel = "anthropic.claude-3-haiku-20240307-v1:0"

// anthropicBody is an Anthropic messages body as InvokeModel takes it.
const anthropicBody = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,` +
	`"messages":[{"role":"user","content":"hi"}]}`

// isolateAWS keeps the AWS SDK away from the machine's credentials and
// from instance metadata.
func isolateAWS(t *testing.T) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", dir+"/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", dir+"/credentials")
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION"} {
		t.Setenv(k, "")
	}
}

// bedrockClient is the official Bedrock Runtime client pointed at s,
// signing with creds, its retries off, each call carrying script.
func bedrockClient(t *testing.T, s *Server, creds AWSCredentials, script string) *bedrockruntime.Client {
	t.Helper()
	isolateAWS(t)
	return bedrockruntime.New(bedrockruntime.Options{
		Region:       creds.Region,
		BaseEndpoint: aws.String(s.URL),
		Credentials:  credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken),
		Retryer:      aws.NopRetryer{},
		HTTPClient:   s.Client(),
		APIOptions:   []func(*middleware.Stack) error{smithyhttp.AddHeaderValue(ScriptHeader, script)},
	})
}

func converseInput() *bedrockruntime.ConverseInput {
	return &bedrockruntime.ConverseInput{
		ModelId: aws.String(bedrockModel),
		Messages: []types.Message{{Role: types.ConversationRoleUser,
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}},
		InferenceConfig: &types.InferenceConfiguration{MaxTokens: aws.Int32(64)},
	}
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestBedrockConverseSDK: the official client's Converse gets the fake's
// answer, text and usage, the model id escaped in the path.
func TestBedrockConverseSDK(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	c := bedrockClient(t, s, DefaultAWS, "200")
	out, err := c.Converse(ctxFor(t), converseInput())
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	msg := out.Output.(*types.ConverseOutputMemberMessage).Value
	if got := msg.Content[0].(*types.ContentBlockMemberText).Value; got != "This is a fake answer." {
		t.Errorf("text = %q", got)
	}
	if out.StopReason != types.StopReasonEndTurn || aws.ToInt32(out.Usage.OutputTokens) != 5 ||
		aws.ToInt32(out.Usage.InputTokens) == 0 ||
		aws.ToInt32(out.Usage.TotalTokens) != aws.ToInt32(out.Usage.InputTokens)+5 {
		t.Errorf("stop %q usage %+v; want end_turn, 5 output tokens", out.StopReason, out.Usage)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/model/"+bedrockModel+"/converse" {
		t.Fatalf("requests %+v", reqs)
	}
}

// TestBedrockConverseStreamSDK: ConverseStream's frames decode into the
// SDK's events, text deltas then the metadata's usage, the stream ending
// without error.
func TestBedrockConverseStreamSDK(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	c := bedrockClient(t, s, DefaultAWS, "200")
	out, err := c.ConverseStream(ctxFor(t), &bedrockruntime.ConverseStreamInput{
		ModelId: aws.String(bedrockModel), Messages: converseInput().Messages})
	if err != nil {
		t.Fatalf("ConverseStream: %v", err)
	}
	st := out.GetStream()
	defer st.Close()
	var text strings.Builder
	var usage *types.TokenUsage
	var stop types.StopReason
	for ev := range st.Events() {
		switch v := ev.(type) {
		case *types.ConverseStreamOutputMemberContentBlockDelta:
			text.WriteString(v.Value.Delta.(*types.ContentBlockDeltaMemberText).Value)
		case *types.ConverseStreamOutputMemberMessageStop:
			stop = v.Value.StopReason
		case *types.ConverseStreamOutputMemberMetadata:
			usage = v.Value.Usage
		}
	}
	// aws-sdk-go-v2's event-stream reader may report a read on a closed
	// connection once the stream's last event is delivered, under load
	// (aws/aws-sdk-go-v2#2737): with that event in hand the stream was whole.
	if err := st.Err(); err != nil && !(errors.Is(err, net.ErrClosed) && usage != nil) {
		t.Fatalf("stream: %v", err)
	}
	if text.String() != "This is a fake answer." || stop != types.StopReasonEndTurn {
		t.Errorf("text %q stop %q", text.String(), stop)
	}
	if usage == nil || aws.ToInt32(usage.OutputTokens) != 5 || aws.ToInt32(usage.InputTokens) == 0 {
		t.Errorf("usage %+v; want 5 output tokens", usage)
	}
}

// TestBedrockInvokeSDK: InvokeModel answers Anthropic's message JSON, the
// token counts in its headers too.
func TestBedrockInvokeSDK(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	c := bedrockClient(t, s, DefaultAWS, "200")
	out, err := c.InvokeModel(ctxFor(t), &bedrockruntime.InvokeModelInput{
		ModelId: aws.String(bedrockModel), Body: []byte(anthropicBody), ContentType: aws.String("application/json")})
	if err != nil {
		t.Fatalf("InvokeModel: %v", err)
	}
	var msg struct {
		Type    string
		Model   string
		Content []struct{ Text string }
		Usage   struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		}
	}
	decode(t, out.Body, &msg)
	var hdr http.Header
	if r, ok := awsmiddleware.GetRawResponse(out.ResultMetadata).(*smithyhttp.Response); ok {
		hdr = r.Header
	}
	if hdr.Get("X-Amzn-Bedrock-Output-Token-Count") != "5" || hdr.Get("X-Amzn-Bedrock-Input-Token-Count") == "" {
		t.Errorf("usage headers %v", hdr)
	}
	if msg.Type != "message" || msg.Model != bedrockModel || msg.Content[0].Text != "This is a fake answer." ||
		msg.Usage.OutputTokens != 5 || msg.Usage.InputTokens == 0 {
		t.Errorf("message %+v", msg)
	}
}

// invokeStream runs InvokeModelWithResponseStream and returns the
// Anthropic events its chunks held, by type, and the stream's error.
func invokeStream(t *testing.T, c *bedrockruntime.Client) ([]map[string]any, error) {
	t.Helper()
	out, err := c.InvokeModelWithResponseStream(ctxFor(t), &bedrockruntime.InvokeModelWithResponseStreamInput{
		ModelId: aws.String(bedrockModel), Body: []byte(anthropicBody), ContentType: aws.String("application/json")})
	if err != nil {
		return nil, err
	}
	st := out.GetStream()
	defer st.Close()
	var evs []map[string]any
	for ev := range st.Events() {
		chunk := ev.(*types.ResponseStreamMemberChunk)
		var m map[string]any
		decode(t, chunk.Value.Bytes, &m)
		evs = append(evs, m)
	}
	err = st.Err()
	if errors.Is(err, net.ErrClosed) && len(evs) > 0 && evs[len(evs)-1]["type"] == "message_stop" {
		err = nil // the SDK's read after the last event (TestBedrockConverseStreamSDK)
	}
	return evs, err
}

// TestBedrockInvokeStreamSDK: InvokeModelWithResponseStream's chunks hold
// Anthropic's stream events, the last with Bedrock's invocation metrics.
func TestBedrockInvokeStreamSDK(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	evs, err := invokeStream(t, bedrockClient(t, s, DefaultAWS, "200"))
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	var text strings.Builder
	for _, ev := range evs {
		if d, ok := ev["delta"].(map[string]any); ok && ev["type"] == "content_block_delta" {
			text.WriteString(d["text"].(string))
		}
	}
	last := evs[len(evs)-1]
	m, _ := last["amazon-bedrock-invocationMetrics"].(map[string]any)
	if evs[0]["type"] != "message_start" || last["type"] != "message_stop" || m["outputTokenCount"] != 5.0 {
		t.Errorf("events %v", evs)
	}
	if text.String() != "This is a fake answer." {
		t.Errorf("text %q", text.String())
	}
}

// TestBedrockRefusesBadSignatures: a request signed with another secret,
// another access key, another region or for another body is refused with
// a 403 in Bedrock's shape and plays no step.
func TestBedrockRefusesBadSignatures(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	wrong := func(f func(*AWSCredentials)) AWSCredentials { c := DefaultAWS; f(&c); return c }
	for _, tc := range []struct {
		name  string
		creds AWSCredentials
		typ   string
	}{
		{"secret", wrong(func(c *AWSCredentials) { c.SecretAccessKey += "x" }), "InvalidSignatureException"},
		{"key", wrong(func(c *AWSCredentials) { c.AccessKeyID = "AKIAOTHER" }), "UnrecognizedClientException"},
		{"region", wrong(func(c *AWSCredentials) { c.Region = "eu-west-1" }), "InvalidSignatureException"},
	} {
		_, err := bedrockClient(t, s, tc.creds, "200").Converse(ctxFor(t), converseInput())
		var ae smithy.APIError
		var re *smithyhttp.ResponseError
		if !errors.As(err, &ae) || ae.ErrorCode() != tc.typ || !errors.As(err, &re) || re.HTTPStatusCode() != 403 {
			t.Errorf("%s: %v; want a 403 %s", tc.name, err, tc.typ)
		}
	}
	// A body changed after signing: the signature no longer matches it.
	tamper := func(st *middleware.Stack) error {
		return st.Finalize.Add(middleware.FinalizeMiddlewareFunc("tamper", func(ctx context.Context,
			in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
			req := in.Request.(*smithyhttp.Request)
			b, _ := io.ReadAll(req.GetStream())
			b = []byte(strings.Replace(string(b), `"hi"`, `"ho"`, 1))
			r, err := req.SetStream(strings.NewReader(string(b)))
			if err != nil {
				return middleware.FinalizeOutput{}, middleware.Metadata{}, err
			}
			in.Request = r
			return next.HandleFinalize(ctx, in)
		}), middleware.After)
	}
	_, err := bedrockClient(t, s, DefaultAWS, "200").Converse(ctxFor(t), converseInput(),
		func(o *bedrockruntime.Options) { o.APIOptions = append(o.APIOptions, tamper) })
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidSignatureException" {
		t.Errorf("tampered body: %v; want InvalidSignatureException", err)
	}
	if s.Calls() != 0 || s.Unauthorized() != 4 {
		t.Errorf("calls %d, unauthorized %d; want 0 and 4", s.Calls(), s.Unauthorized())
	}
}

// TestBedrockUnsigned: a plain request without a signature is a 403 with
// x-amzn-ErrorType and a request id.
func TestBedrockUnsigned(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	resp, err := http.Post(s.URL+"/model/"+bedrockModel+"/converse", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	b := readAll(t, resp)
	var e struct{ Message string }
	decode(t, b, &e)
	if resp.StatusCode != 403 || resp.Header.Get("x-amzn-ErrorType") != "MissingAuthenticationTokenException" ||
		resp.Header.Get("x-amzn-RequestId") == "" || e.Message == "" {
		t.Errorf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
}

// TestBedrockSignatureClock: a signature older than 15 minutes by the
// Provider's clock is refused.
func TestBedrockSignatureClock(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	s.Now = func() time.Time { return time.Now().Add(20 * time.Minute) }
	_, err := bedrockClient(t, s, DefaultAWS, "200").Converse(ctxFor(t), converseInput())
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidSignatureException" ||
		!strings.Contains(ae.ErrorMessage(), "Signature expired") {
		t.Errorf("%v; want an expired signature", err)
	}
}

// TestBedrockSessionToken: with a session token set, a request must carry
// it.
func TestBedrockSessionToken(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	s.AWS = AWSCredentials{SessionToken: "session-1"}
	with := DefaultAWS
	with.SessionToken = "session-1"
	if _, err := bedrockClient(t, s, with, "200").Converse(ctxFor(t), converseInput()); err != nil {
		t.Errorf("with the token: %v", err)
	}
	_, err := bedrockClient(t, s, DefaultAWS, "200").Converse(ctxFor(t), converseInput())
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "UnrecognizedClientException" {
		t.Errorf("without: %v; want UnrecognizedClientException", err)
	}
}

// TestBedrockErrorsSDK: scripted errors reach the SDK as Bedrock's typed
// errors, named by x-amzn-ErrorType.
func TestBedrockErrorsSDK(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	for _, tc := range []struct {
		script string
		status int
		typ    any
	}{
		{"429", 429, new(*types.ThrottlingException)},
		{"503", 503, new(*types.ServiceUnavailableException)},
		{"overloaded", 503, new(*types.ServiceUnavailableException)},
		{"throttled", 429, new(*types.ThrottlingException)},
		{"429:model_not_ready", 429, new(*types.ModelNotReadyException)},
		{"424", 424, new(*types.ModelErrorException)},
		{"400", 400, new(*types.ValidationException)},
		{"400:context_length_exceeded", 400, new(*types.ValidationException)},
		{"403", 403, new(*types.AccessDeniedException)},
		{"500", 500, new(*types.InternalServerException)},
		{"429:insufficient_quota", 429, new(*types.ServiceQuotaExceededException)},
	} {
		_, err := bedrockClient(t, s, DefaultAWS, tc.script).Converse(ctxFor(t), converseInput())
		var re *smithyhttp.ResponseError
		if !errors.As(err, tc.typ) || !errors.As(err, &re) || re.HTTPStatusCode() != tc.status {
			t.Errorf("%s: %v (%T); want %d %T", tc.script, err, errors.Unwrap(err), tc.status, tc.typ)
		}
	}
}

// TestBedrockStreamExceptionsSDK: a stream's exception frames reach the
// SDK as its typed errors: throttled and overloaded as the first frame, a
// model stream error after text. A cut after text never shows the
// terminal message_stop; the SDK may read it as a clean end (smithy-go
// takes an unexpected EOF at a frame boundary for the end), so whoever
// judges a Bedrock stream must look for its terminal event.
func TestBedrockStreamExceptionsSDK(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	for _, tc := range []struct {
		script string
		typ    any // nil: a cut
		text   bool
	}{
		{"throttled", new(*types.ThrottlingException), false},
		{"overloaded", new(*types.ServiceUnavailableException), false},
		{"stream:error-after=3", new(*types.ModelStreamErrorException), true},
		{"cut", nil, false},
		{"stream:cut-after=3", nil, true},
	} {
		evs, err := invokeStream(t, bedrockClient(t, s, DefaultAWS, tc.script))
		if tc.typ != nil && !errors.As(err, tc.typ) {
			t.Errorf("%s: %v; want %T", tc.script, err, tc.typ)
		}
		var text bool
		for _, ev := range evs {
			text = text || ev["type"] == "content_block_delta"
			if ev["type"] == "message_stop" {
				t.Errorf("%s: the terminal event came", tc.script)
			}
		}
		if text != tc.text {
			t.Errorf("%s: text %v in %v; want %v", tc.script, text, evs, tc.text)
		}
	}
}

// TestBedrockLimitsAndStalls: under the Provider's rate limit a call over
// it is a 429 ThrottlingException to the SDK, with no rate-limit header;
// hang sends no byte, and stall-after=1 one frame, until the client
// gives up.
func TestBedrockLimitsAndStalls(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	s.RequestsPerMinute = 1
	c := bedrockClient(t, s, DefaultAWS, "200")
	if _, err := c.Converse(ctxFor(t), converseInput()); err != nil {
		t.Fatalf("first: %v", err)
	}
	_, err := c.Converse(ctxFor(t), converseInput())
	var te *types.ThrottlingException
	if !errors.As(err, &te) || s.RateLimited() != 1 {
		t.Errorf("over the limit: %v (%d limited); want a ThrottlingException", err, s.RateLimited())
	}
	s.RequestsPerMinute = 0
	for _, script := range []string{"hang", "stream:stall-after=1"} {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		out, err := bedrockClient(t, s, DefaultAWS, script).ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{
			ModelId: aws.String(bedrockModel), Messages: converseInput().Messages})
		n := 0
		if err == nil {
			for range out.GetStream().Events() {
				n++
			}
			err = out.GetStream().Err()
			out.GetStream().Close()
		}
		cancel()
		if want := map[string]int{"hang": 0, "stream:stall-after=1": 1}[script]; err == nil || n != want {
			t.Errorf("%s: %d events, %v; want %d and the deadline", script, n, err, want)
		}
	}
}
