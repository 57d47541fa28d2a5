package fake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/sluice-llm/sluice/internal/awsevent"
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

// frames reads a response's AWS event-stream frames until its end or an
// error, which it returns: io.EOF for a clean end.
func frames(resp *http.Response) ([]awsevent.Frame, error) {
	r := awsevent.NewReader(resp.Body)
	var out []awsevent.Frame
	for {
		f, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

// TestBedrockStreamFrames reads ConverseStream on the wire, signed by the
// signer alone: a 200 of application/vnd.amazon.eventstream, each frame
// an event message named by :event-type; throttled, one exception frame
// (:message-type exception, :exception-type throttlingException); a cut
// after text ends in io.ErrUnexpectedEOF, never the clean io.EOF of a
// stream that ended.
func TestBedrockStreamFrames(t *testing.T) {
	s := NewServer("200")
	defer s.Close()
	path := "/model/" + url.PathEscape(bedrockModel) + "/converse-stream"
	body := `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`

	resp := signedPost(t, s, DefaultAWS, path, "stream:events=2", body)
	ms, err := frames(resp)
	var names []string
	for _, m := range ms {
		names = append(names, m.Type+":"+m.Name)
	}
	want := "event:messageStart event:contentBlockDelta event:contentBlockDelta event:contentBlockStop " +
		"event:messageStop event:metadata"
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != eventStreamType || err != io.EOF ||
		strings.Join(names, " ") != want {
		t.Errorf("%d %q %v: frames %v; want %s", resp.StatusCode, resp.Header.Get("Content-Type"), err, names, want)
	}

	resp = signedPost(t, s, DefaultAWS, path, "throttled", body)
	ms, err = frames(resp)
	if resp.StatusCode != 200 || err != io.EOF || len(ms) != 1 || ms[0].Type != awsevent.Exception ||
		ms[0].Name != "throttlingException" {
		t.Errorf("throttled: %d %v %+v", resp.StatusCode, err, ms)
	}

	resp = signedPost(t, s, DefaultAWS, path, "stream:cut-after=2", body)
	ms, err = frames(resp)
	if err != io.ErrUnexpectedEOF || len(ms) != 2 || ms[1].Name != "contentBlockDelta" {
		t.Errorf("cut: %v, %d frames; want 2 then io.ErrUnexpectedEOF", err, len(ms))
	}
}
