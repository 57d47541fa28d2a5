package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// signedPost sends body to path on s signed with creds by aws-sdk-go-v2's
// signer, as a gateway would, the script in its header.
func signedPost(t *testing.T, s *Server, creds AWSCredentials, path, script, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ScriptHeader, script)
	sum := sha256.Sum256([]byte(body))
	c := aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretAccessKey}
	if err := v4.NewSigner().SignHTTP(context.Background(), c, req, hex.EncodeToString(sum[:]),
		"bedrock", creds.Region, time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// frames decodes a response's AWS event-stream messages until its end or
// an error, which it returns.
func frames(resp *http.Response) ([]eventstream.Message, error) {
	dec := eventstream.NewDecoder()
	var out []eventstream.Message
	for {
		m, err := dec.Decode(resp.Body, nil)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return out, err
		}
		out = append(out, m)
	}
}

// header returns a frame's string header.
func header(m eventstream.Message, name string) string {
	if v := m.Headers.Get(name); v != nil {
		return v.String()
	}
	return ""
}

// TestBedrockStreamFrames reads ConverseStream on the wire, signed by the
// signer alone: a 200 of application/vnd.amazon.eventstream, each frame
// an event message named by :event-type; throttled, one exception frame
// (:message-type exception, :exception-type throttlingException); a cut
// after text ends in a truncated read, not a clean EOF.
func TestBedrockStreamFrames(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	path := "/model/" + url.PathEscape(bedrockModel) + "/converse-stream"
	body := `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`

	resp := signedPost(t, s, DefaultAWS, path, "stream:events=2", body)
	ms, err := frames(resp)
	var names []string
	for _, m := range ms {
		names = append(names, header(m, ":message-type")+":"+header(m, ":event-type"))
	}
	want := "event:messageStart event:contentBlockDelta event:contentBlockDelta event:contentBlockStop " +
		"event:messageStop event:metadata"
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != eventStreamType || err != nil ||
		strings.Join(names, " ") != want {
		t.Errorf("%d %q %v: frames %v; want %s", resp.StatusCode, resp.Header.Get("Content-Type"), err, names, want)
	}

	resp = signedPost(t, s, DefaultAWS, path, "throttled", body)
	ms, err = frames(resp)
	if resp.StatusCode != 200 || err != nil || len(ms) != 1 || header(ms[0], ":message-type") != "exception" ||
		header(ms[0], ":exception-type") != "throttlingException" {
		t.Errorf("throttled: %d %v %+v", resp.StatusCode, err, ms)
	}

	resp = signedPost(t, s, DefaultAWS, path, "stream:cut-after=2", body)
	ms, err = frames(resp)
	if err == nil || len(ms) != 2 || header(ms[1], ":event-type") != "contentBlockDelta" {
		t.Errorf("cut: %v, %d frames; want 2 then an error", err, len(ms))
	}
}
