package sluice

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/awssign"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/awsevent"
	"github.com/sluice-llm/sluice/internal/leaktest"
)

// The Bedrock models of these tests, as ids and as a path escapes them.
const (
	bedrockModel   = "anthropic.claude-3-haiku-20240307-v1:0"
	bedrockEscaped = "anthropic.claude-3-haiku-20240307-v1%3A0"
	bedrockARN     = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0"
	converseBody   = `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":64}}`
	invokeBody     = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
)

// bedrockEnv points the AWS credential chain at the fake's credentials
// (or another secret), in the environment only: no file, no instance
// metadata.
func bedrockEnv(t *testing.T, secret string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	for _, k := range []string{"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE",
		"AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_ENDPOINT_URL", "AWS_CA_BUNDLE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_ACCESS_KEY_ID", fake.DefaultAWS.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	t.Setenv("AWS_REGION", fake.DefaultAWS.Region)
}

// bedrockRig is a Transport speaking Bedrock to a fake, signing with the
// fake's credentials from the environment.
type bedrockRig struct {
	t   *testing.T
	srv *fake.Server
	tr  *Transport
}

func newBedrockRig(t *testing.T, secret string) *bedrockRig {
	t.Helper()
	leaktest.Check(t)
	bedrockEnv(t, secret)
	s, err := awssign.New(dialect.SignerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &bedrockRig{t: t, srv: fake.NewServer("200")}
	r.tr = &Transport{Dialect: dialect.Bedrock, Signer: s, Policy: fastPolicy(), Provider: "bedrock"}
	t.Cleanup(func() {
		r.srv.Close()
		r.tr.CloseIdleConnections()
	})
	return r
}

// call sends a Bedrock call for op with body and script, as an AWS SDK
// would send it (the model escaped), and returns the response.
func (r *bedrockRig) call(op, body, script string) *http.Response {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	r.t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, "POST", r.srv.URL+"/model/"+bedrockEscaped+"/"+op, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(fake.ScriptHeader, script)
	resp, err := r.tr.RoundTrip(req)
	if err != nil {
		r.t.Fatalf("%s %s: %v", op, script, err)
	}
	return resp
}

// readBedrock reads a response body to its end, and returns it and the
// read's error.
func readBedrock(t *testing.T, resp *http.Response) ([]byte, error) {
	t.Helper()
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}

// bedrockEvents returns the events of a Bedrock stream, as the dialect
// reads them.
func bedrockEvents(h http.Header, b []byte) []dialect.Event {
	var evs []dialect.Event
	s := dialect.Bedrock.Stream(h)
	if s == nil {
		return nil
	}
	s.Feed(b, func(ev dialect.Event) bool {
		ev.Data = bytes.Clone(ev.Data)
		evs = append(evs, ev)
		return true
	})
	return evs
}

// TestBedrockSigned: the Transport signs each call, the fake accepts it,
// and the usage of Converse and ConverseStream is read; another secret
// gets the fake's 403, never retried.
func TestBedrockSigned(t *testing.T) {
	r := newBedrockRig(t, fake.DefaultAWS.SecretAccessKey)
	resp := r.call("converse", converseBody, "200")
	b, err := readBedrock(t, resp)
	u, ok := dialect.Bedrock.Usage(b)
	if err != nil || resp.StatusCode != 200 || !ok || u.Output != 5 || u.Input == 0 {
		t.Fatalf("converse: %d %s, %v; usage %+v, %v", resp.StatusCode, b, err, u, ok)
	}
	resp = r.call("converse-stream", converseBody, "200")
	b, err = readBedrock(t, resp)
	ur := dialect.Bedrock.StreamUsage()
	ur.Write(b)
	if u, ok := ur.Usage(); err != nil || resp.StatusCode != 200 || !ok || u.Output != 5 || u.Input == 0 {
		t.Fatalf("converse-stream: %d, %v; usage %+v, %v", resp.StatusCode, err, u, ok)
	}
	if r.srv.Calls() != 2 || r.srv.Unauthorized() != 0 {
		t.Errorf("calls %d, refused %d; want 2, 0", r.srv.Calls(), r.srv.Unauthorized())
	}

	w := newBedrockRig(t, "another-secret")
	resp = w.call("converse", converseBody, "200")
	b, _ = readBedrock(t, resp)
	if resp.StatusCode != 403 || !strings.Contains(string(b), "signature") || w.srv.Unauthorized() != 1 || w.srv.Calls() != 0 {
		t.Errorf("another secret: %d %s, refused %d; want one 403", resp.StatusCode, b, w.srv.Unauthorized())
	}
}

// tamperSigner signs a body other than the one sent.
type tamperSigner struct{ dialect.Signer }

func (s tamperSigner) Sign(r *http.Request, body []byte) error {
	return s.Signer.Sign(r, append(bytes.Clone(body), ' '))
}

// TestBedrockTampered: a request whose body is not the one signed is
// refused with a 403, and not retried.
func TestBedrockTampered(t *testing.T) {
	r := newBedrockRig(t, fake.DefaultAWS.SecretAccessKey)
	r.tr.Signer = tamperSigner{r.tr.Signer}
	resp := r.call("converse", converseBody, "200")
	b, _ := readBedrock(t, resp)
	if resp.StatusCode != 403 || resp.Header.Get("x-amzn-ErrorType") != "InvalidSignatureException" ||
		r.srv.Unauthorized() != 1 || r.srv.Calls() != 0 {
		t.Errorf("%d %v %s; refused %d; want one 403 InvalidSignatureException", resp.StatusCode, resp.Header, b, r.srv.Unauthorized())
	}
}

// TestBedrockVerdicts: the engine retries Bedrock's throttling, its
// unavailable service and its model not ready, and never a validation
// error, a denied access or a used-up service quota.
func TestBedrockVerdicts(t *testing.T) {
	for _, tt := range []struct {
		script string
		calls  int
		status int
	}{
		{"429,200", 2, 200},        // ThrottlingException
		{"throttled,200", 2, 200},  // ThrottlingException
		{"503,200", 2, 200},        // ServiceUnavailableException
		{"overloaded,200", 2, 200}, // ServiceUnavailableException
		{"429:model_not_ready,200", 2, 200},
		{"400,200", 1, 400},                    // ValidationException
		{"403,200", 1, 403},                    // AccessDeniedException
		{"429:insufficient_quota,200", 1, 429}, // ServiceQuotaExceededException
	} {
		t.Run(tt.script, func(t *testing.T) {
			r := newBedrockRig(t, fake.DefaultAWS.SecretAccessKey)
			resp := r.call("converse", converseBody, tt.script)
			readBedrock(t, resp)
			if resp.StatusCode != tt.status || r.srv.Calls() != tt.calls {
				t.Errorf("%d after %d calls; want %d after %d", resp.StatusCode, r.srv.Calls(), tt.status, tt.calls)
			}
		})
	}
}

// TestBedrockStreamsWhole: ConverseStream and InvokeModelWithResponseStream
// reach the caller whole, ending in their terminal event, their usage
// read; a throttled stream's first frame is retried, unseen by the caller.
func TestBedrockStreamsWhole(t *testing.T) {
	for _, tt := range []struct {
		op, body, script, last string
		calls                  int
	}{
		{"converse-stream", converseBody, "200", "metadata", 1},
		{"invoke-with-response-stream", invokeBody, "200", "chunk", 1},
		{"converse-stream", converseBody, "throttled,200", "metadata", 2},
		{"invoke-with-response-stream", invokeBody, "overloaded,200", "chunk", 2},
	} {
		t.Run(tt.op+"/"+tt.script, func(t *testing.T) {
			r := newBedrockRig(t, fake.DefaultAWS.SecretAccessKey)
			resp := r.call(tt.op, tt.body, tt.script)
			b, err := readBedrock(t, resp)
			evs := bedrockEvents(resp.Header, b)
			if err != nil || resp.StatusCode != 200 || len(evs) < 5 || r.srv.Calls() != tt.calls {
				t.Fatalf("%d, %v, %d events, %d calls; want a whole stream after %d", resp.StatusCode, err, len(evs), r.srv.Calls(), tt.calls)
			}
			for i, ev := range evs {
				if ev.Status != 0 || ev.End != (i == len(evs)-1) {
					t.Errorf("event %d %s: end %v, status %d", i, ev.Type, ev.End, ev.Status)
				}
			}
			if evs[len(evs)-1].Type != tt.last || resp.Header.Get("Sluice-Attempts") != string(rune('0'+tt.calls)) {
				t.Errorf("last event %s, attempts %s", evs[len(evs)-1].Type, resp.Header.Get("Sluice-Attempts"))
			}
			ur := dialect.Bedrock.StreamUsage()
			ur.Write(b)
			if u, ok := ur.Usage(); !ok || u.Output != 5 || u.Input == 0 {
				t.Errorf("usage %+v, %v", u, ok)
			}
		})
	}
}

// TestBedrockStreamCut: a stream that stops after its text, before its
// terminal event, is an error to the reader, never a clean EOF: cut by
// the connection (the fake), or ended cleanly between two frames (an
// upstream that just stops), which an AWS SDK would take for the end.
func TestBedrockStreamCut(t *testing.T) {
	r := newBedrockRig(t, fake.DefaultAWS.SecretAccessKey)
	resp := r.call("converse-stream", converseBody, "stream:cut-after=3")
	b, err := readBedrock(t, resp)
	if err == nil || len(bedrockEvents(resp.Header, b)) != 3 {
		t.Errorf("cut by the fake: %v after %d events; want an error after 3", err, len(bedrockEvents(resp.Header, b)))
	}

	var frames []byte
	for _, f := range []awsevent.Frame{
		{Type: awsevent.Event, Name: "messageStart", Payload: []byte(`{"role":"assistant"}`)},
		{Type: awsevent.Event, Name: "contentBlockDelta", Payload: []byte(`{"contentBlockIndex":0,"delta":{"text":"Hi"}}`)},
		{Type: awsevent.Event, Name: "messageStop", Payload: []byte(`{"stopReason":"end_turn"}`)},
	} {
		frames = append(frames, f.Encode()...)
	}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.Copy(io.Discard, req.Body)
		w.Header().Set("Content-Type", awsevent.ContentType)
		w.Write(frames) // and a clean end, no metadata
	}))
	defer up.Close()
	tr := &Transport{Dialect: dialect.Bedrock, Policy: fastPolicy()}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("POST", up.URL+"/model/"+bedrockEscaped+"/converse-stream", strings.NewReader(converseBody))
	resp, err = tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err = readBedrock(t, resp)
	if !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(b, frames) {
		t.Errorf("a clean end before metadata: %v after %d of %d bytes; want io.ErrUnexpectedEOF after all", err, len(b), len(frames))
	}
}

// TestBedrockStreamError: an exception frame after the text
// (modelStreamErrorException) reaches the caller as it came, for its SDK
// to raise, and fails the attempt as the server error it stands for.
func TestBedrockStreamError(t *testing.T) {
	r := newBedrockRig(t, fake.DefaultAWS.SecretAccessKey)
	var outcome Outcome
	var class string
	r.tr.Observe = func(a *Attempt) { outcome, class = a.Outcome, a.Error }
	resp := r.call("converse-stream", converseBody, "stream:error-after=3")
	b, err := readBedrock(t, resp)
	evs := bedrockEvents(resp.Header, b)
	if err != nil || len(evs) != 4 || evs[3].Type != "modelStreamErrorException" || evs[3].Status != 500 {
		t.Fatalf("%v, events %+v; want 3 events and the exception frame", err, evs)
	}
	if outcome != OutcomeFail || class != "stream_error" || r.srv.Calls() != 1 {
		t.Errorf("outcome %s %q after %d calls; want fail stream_error after 1", outcome, class, r.srv.Calls())
	}
}

// TestBedrockFallback: a fallback's model goes in the path, escaped as the
// AWS SDKs escape it, and the fallback answers, signed.
func TestBedrockFallback(t *testing.T) {
	r := newBedrockRig(t, fake.DefaultAWS.SecretAccessKey)
	backup := fake.NewServer("200")
	defer backup.Close()
	u, _ := url.Parse(backup.URL)
	r.tr.Fallbacks = []Target{{Provider: "backup", Model: bedrockARN, Rewrite: func(req *http.Request) {
		req.URL.Scheme, req.URL.Host, req.Host = u.Scheme, u.Host, u.Host
		req.Header.Del(fake.ScriptHeader)
	}}}
	resp := r.call("invoke", invokeBody, "503")
	b, err := readBedrock(t, resp)
	if err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), `"model":"`+bedrockARN+`"`) {
		t.Fatalf("%d %s, %v; want the fallback's answer", resp.StatusCode, b, err)
	}
	reqs := backup.Requests()
	if r.srv.Calls() != 3 || len(reqs) != 1 || reqs[0].Path != "/model/"+bedrockARN+"/invoke" || backup.Unauthorized() != 0 {
		t.Errorf("primary %d calls; fallback %+v, refused %d", r.srv.Calls(), reqs, backup.Unauthorized())
	}
	if resp.Header.Get("Sluice-Model") != bedrockARN || resp.Header.Get("Sluice-Provider") != "backup" {
		t.Errorf("answered by %s/%s", resp.Header.Get("Sluice-Provider"), resp.Header.Get("Sluice-Model"))
	}
}

// bedrockGateway is a gateway in miniature: it authenticates a client by
// the access key id of its signature, drops the client's credentials,
// sends the call through the Transport (which signs it with its own),
// and relays the answer, ending a stream it cannot finish with Bedrock's
// error frame.
func bedrockGateway(t *testing.T, tr *Transport, upstream, token string) *httptest.Server {
	up, _ := url.Parse(upstream)
	c := dialect.Bedrock.Client()
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if c.Key(req) != token {
			b := c.Error(w.Header(), 401, "unauthorized", "sluice: unknown key")
			w.WriteHeader(401)
			w.Write(b)
			return
		}
		body, _ := io.ReadAll(req.Body)
		out := req.Clone(req.Context())
		out.RequestURI, out.Host = "", up.Host
		out.URL.Scheme, out.URL.Host = up.Scheme, up.Host
		out.Body = io.NopCloser(bytes.NewReader(body))
		c.SetKey(out, "")
		resp, err := tr.RoundTrip(out)
		if err != nil {
			b := c.Error(w.Header(), 502, "upstream_unreachable", err.Error())
			w.WriteHeader(502)
			w.Write(b)
			return
		}
		defer resp.Body.Close()
		for _, k := range []string{"Content-Type", "X-Amzn-Errortype", "X-Amzn-Requestid"} {
			if v := resp.Header.Get(k); v != "" {
				w.Header().Set(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			w.Write(buf[:n])
			http.NewResponseController(w).Flush()
			if err == io.EOF {
				return
			}
			if err != nil {
				w.Write(c.ErrorEvent("stream_cut", "sluice: the provider's stream was cut"))
				return
			}
		}
	}))
}

// TestBedrockSDKThroughTransport: aws-sdk-go-v2's own Bedrock Runtime
// client, pointed at a gateway that forwards through the Transport, gets
// answers to Converse and ConverseStream, signed with the client's own
// credentials (its token) and re-signed upstream with the gateway's; a
// stream cut after its text is an error to it.
func TestBedrockSDKThroughTransport(t *testing.T) {
	r := newBedrockRig(t, fake.DefaultAWS.SecretAccessKey)
	gw := bedrockGateway(t, r.tr, r.srv.URL, "sluice-client-token")
	defer gw.Close()
	client := func(akid string) *bedrockruntime.Client {
		return bedrockruntime.New(bedrockruntime.Options{
			Region: "us-east-1", BaseEndpoint: aws.String(gw.URL), Retryer: aws.NopRetryer{}, HTTPClient: gw.Client(),
			Credentials: credentials.NewStaticCredentialsProvider(akid, "the-client-secret", ""),
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msgs := []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}

	out, err := client("sluice-client-token").Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: msgs})
	if err != nil {
		t.Fatalf("Converse: %v", err)
	}
	text := out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value
	if text != "This is a fake answer." || aws.ToInt32(out.Usage.OutputTokens) != 5 {
		t.Errorf("Converse: %q, %+v", text, out.Usage)
	}

	stream := func(script string) (string, error) {
		so, err := client("sluice-client-token").ConverseStream(ctx, &bedrockruntime.ConverseStreamInput{ModelId: aws.String(bedrockModel), Messages: msgs},
			func(o *bedrockruntime.Options) {
				o.APIOptions = append(o.APIOptions, smithyhttp.AddHeaderValue(fake.ScriptHeader, script))
			})
		if err != nil {
			return "", err
		}
		st := so.GetStream()
		defer st.Close()
		var b strings.Builder
		whole := false
		for ev := range st.Events() {
			switch v := ev.(type) {
			case *types.ConverseStreamOutputMemberContentBlockDelta:
				b.WriteString(v.Value.Delta.(*types.ContentBlockDeltaMemberText).Value)
			case *types.ConverseStreamOutputMemberMetadata:
				whole = true
			}
		}
		// aws-sdk-go-v2's event-stream reader may report a read on a closed
		// connection once the last event is delivered, under load
		// (aws/aws-sdk-go-v2#2737): with the metadata in hand, it was whole.
		if err := st.Err(); err != nil && !(errors.Is(err, net.ErrClosed) && whole) {
			return b.String(), err
		}
		return b.String(), nil
	}
	if text, err := stream("200"); err != nil || text != "This is a fake answer." {
		t.Errorf("ConverseStream: %q, %v", text, err)
	}
	text, err = stream("stream:cut-after=3")
	var se *types.ServiceUnavailableException
	if !errors.As(err, &se) || text == "" {
		t.Errorf("a cut stream: %q, %v; want its text, then a ServiceUnavailableException", text, err)
	}

	_, err = client("AKIAUNKNOWN").Converse(ctx, &bedrockruntime.ConverseInput{ModelId: aws.String(bedrockModel), Messages: msgs})
	var ad *types.AccessDeniedException
	if !errors.As(err, &ad) {
		t.Errorf("an unknown client: %v; want AccessDeniedException", err)
	}
	if r.srv.Calls() != 3 || r.srv.Unauthorized() != 0 {
		t.Errorf("the fake got %d calls, refused %d; want 3, 0", r.srv.Calls(), r.srv.Unauthorized())
	}
}
