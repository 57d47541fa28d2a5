package awssign

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/smithy-go/encoding/httpbinding"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/fake"
)

const (
	claude   = "anthropic.claude-3-5-sonnet-20240620-v1:0"
	claudeEs = "anthropic.claude-3-5-sonnet-20240620-v1%3A0"
	arn      = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0"
	converse = `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":300}}`
)

// isolateAWS keeps the AWS credential chain away from the machine's
// credentials and from instance metadata, and returns a private dir.
func isolateAWS(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS", "AWS_CA_BUNDLE"} {
		t.Setenv(k, "")
	}
	return dir
}

// signer returns Bedrock's Signer with options o.
func signer(t *testing.T, o dialect.SignerOptions) dialect.Signer {
	t.Helper()
	s, err := New(o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// call signs and sends a Converse call to s with script, and returns its
// status and body.
func call(t *testing.T, s *fake.Server, sg dialect.Signer, path, script string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	body := []byte(converse)
	r, _ := http.NewRequestWithContext(ctx, "POST", s.URL+path, bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set(fake.ScriptHeader, script)
	if err := sg.Sign(r, body); err != nil {
		t.Fatalf("Sign: %v", err)
	}
	resp, err := s.Client().Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestBedrockSignerChain: the standard chain's sources sign requests the
// fake accepts: the environment, a profile of the shared credentials
// file, session credentials; with another secret the fake refuses them.
func TestBedrockSignerChain(t *testing.T) {
	s := fake.NewServer("200")
	defer s.Close()
	path := "/model/" + claudeEs + "/converse"
	t.Run("environment", func(t *testing.T) {
		isolateAWS(t)
		t.Setenv("AWS_ACCESS_KEY_ID", fake.DefaultAWS.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", fake.DefaultAWS.SecretAccessKey)
		if st, b := call(t, s, signer(t, dialect.SignerOptions{Region: "us-east-1"}), path, "200"); st != 200 {
			t.Errorf("%d %s", st, b)
		}
		t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
		if st, b := call(t, s, signer(t, dialect.SignerOptions{Region: "us-east-1"}), path, "200"); st != 403 || !strings.Contains(b, "signature") {
			t.Errorf("another secret: %d %s; want 403", st, b)
		}
		if st, _ := call(t, s, signer(t, dialect.SignerOptions{Region: "eu-west-1"}), path, "200"); st != 403 {
			t.Errorf("another region: %d; want 403", st)
		}
	})
	t.Run("profile", func(t *testing.T) {
		dir := isolateAWS(t)
		creds := "[other]\naws_access_key_id = AKIAOTHER\naws_secret_access_key = x\n\n[ci]\naws_access_key_id = " +
			fake.DefaultAWS.AccessKeyID + "\naws_secret_access_key = " + fake.DefaultAWS.SecretAccessKey + "\n"
		os.WriteFile(filepath.Join(dir, "credentials"), []byte(creds), 0o600)
		os.WriteFile(filepath.Join(dir, "config"), []byte("[profile ci]\nregion = us-east-1\n"), 0o600)
		t.Setenv("AWS_PROFILE", "ci")
		if st, b := call(t, s, signer(t, dialect.SignerOptions{}), path, "200"); st != 200 {
			t.Errorf("%d %s", st, b)
		}
		file := filepath.Join(dir, "elsewhere")
		os.WriteFile(file, []byte("[ci]\naws_access_key_id = AKIAOTHER\naws_secret_access_key = x\n"), 0o600)
		if st, b := call(t, s, signer(t, dialect.SignerOptions{CredentialsFile: file}), path, "200"); st != 403 || !strings.Contains(b, "security token") {
			t.Errorf("CredentialsFile: %d %s; want its key refused", st, b)
		}
	})
	t.Run("session", func(t *testing.T) {
		isolateAWS(t)
		s.AWS.SessionToken = "session-1"
		defer func() { s.AWS.SessionToken = "" }()
		t.Setenv("AWS_ACCESS_KEY_ID", fake.DefaultAWS.AccessKeyID)
		t.Setenv("AWS_SECRET_ACCESS_KEY", fake.DefaultAWS.SecretAccessKey)
		t.Setenv("AWS_SESSION_TOKEN", "session-1")
		t.Setenv("AWS_REGION", "us-east-1")
		if st, b := call(t, s, signer(t, dialect.SignerOptions{}), path, "200"); st != 200 {
			t.Errorf("%d %s", st, b)
		}
	})
	if s.Calls() != 3 || s.Unauthorized() != 3 {
		t.Errorf("calls %d, refused %d; want 3 and 3", s.Calls(), s.Unauthorized())
	}
}

// TestBedrockSignerCaches: the chain's credentials are fetched once for
// many signatures (a credential process counts its runs).
func TestBedrockSignerCaches(t *testing.T) {
	dir := isolateAWS(t)
	count := filepath.Join(dir, "runs")
	script := filepath.Join(dir, "creds.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho run >> "+count+"\n"+
		`echo '{"Version":1,"AccessKeyId":"`+fake.DefaultAWS.AccessKeyID+`","SecretAccessKey":"`+fake.DefaultAWS.SecretAccessKey+`"}'`+"\n"), 0o700)
	os.WriteFile(filepath.Join(dir, "config"), []byte("[default]\nregion = us-east-1\ncredential_process = "+script+"\n"), 0o600)
	s := fake.NewServer("200")
	defer s.Close()
	sg := signer(t, dialect.SignerOptions{})
	for range 20 {
		if st, b := call(t, s, sg, "/model/m/converse", "200"); st != 200 {
			t.Fatalf("%d %s", st, b)
		}
	}
	if b, _ := os.ReadFile(count); strings.Count(string(b), "run") != 1 {
		t.Errorf("the credential process ran %d times for 20 calls; want once", strings.Count(string(b), "run"))
	}
}

// TestBedrockSignerFails: no credentials, or no region, is an error at
// Sign, and nothing is signed.
func TestBedrockSignerFails(t *testing.T) {
	isolateAWS(t)
	r, _ := http.NewRequest("POST", "http://127.0.0.1:1/model/m/converse", nil)
	if err := signer(t, dialect.SignerOptions{Region: "us-east-1"}).Sign(r, nil); err == nil || r.Header.Get("Authorization") != "" {
		t.Errorf("no credentials: %v, %v", err, r.Header)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIA1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	if err := signer(t, dialect.SignerOptions{}).Sign(r, nil); err == nil || !strings.Contains(err.Error(), "region") {
		t.Errorf("no region: %v", err)
	}
	r, _ = http.NewRequest("POST", "https://bedrock-runtime.eu-west-3.amazonaws.com/model/m/converse", nil)
	if err := signer(t, dialect.SignerOptions{}).Sign(r, nil); err != nil || !strings.Contains(r.Header.Get("Authorization"), "/eu-west-3/bedrock/") {
		t.Errorf("the host's region: %v, %s", err, r.Header.Get("Authorization"))
	}
}

// TestBedrockSignerPath: the signer sends a model path escaped as the AWS
// SDKs do, whatever the URL's RawPath, and the fake accepts it; a stale
// signature's headers are replaced.
func TestBedrockSignerPath(t *testing.T) {
	isolateAWS(t)
	t.Setenv("AWS_ACCESS_KEY_ID", fake.DefaultAWS.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", fake.DefaultAWS.SecretAccessKey)
	sg := signer(t, dialect.SignerOptions{Region: "us-east-1"})
	s := fake.NewServer("200")
	defer s.Close()
	for _, m := range []string{claude, arn} {
		body := []byte(converse)
		r, _ := http.NewRequest("POST", s.URL, bytes.NewReader(body))
		r.URL.Path = "/model/" + m + "/converse" // decoded, RawPath empty, as after a fallback
		r.Header.Set("X-Amz-Security-Token", "stale")
		r.Header.Set("X-Amz-Date", "20000101T000000Z")
		u := r.URL
		if err := sg.Sign(r, body); err != nil {
			t.Fatal(err)
		}
		if got, want := r.URL.EscapedPath(), "/model/"+httpbinding.EscapePath(m, true)+"/converse"; got != want || u.RawPath != "" {
			t.Errorf("sent as %s; want %s, in a copy of the URL", got, want)
		}
		resp, err := s.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || r.Header.Get("X-Amz-Security-Token") != "" {
			t.Errorf("%s: %d %s", m, resp.StatusCode, b)
		}
	}
	if reqs := s.Requests(); len(reqs) != 2 || reqs[1].Path != "/model/"+arn+"/converse" {
		t.Errorf("requests %+v", reqs)
	}
}

// TestBedrockSignerWebIdentity: a web identity (AWS_WEB_IDENTITY_TOKEN_FILE
// and AWS_ROLE_ARN) is exchanged once at STS, through o.Client, for
// session credentials the fake accepts. STS is a local stand-in
// (AWS_ENDPOINT_URL_STS), and o.Client dials the loopback only.
func TestBedrockSignerWebIdentity(t *testing.T) {
	dir := isolateAWS(t)
	var exchanges, viaClient atomic.Int32
	sts := httptestServer(t, func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		if r.Form.Get("Action") != "AssumeRoleWithWebIdentity" || r.Form.Get("WebIdentityToken") != "the-oidc-token" {
			w.WriteHeader(400)
			return
		}
		exchanges.Add(1)
		w.Header().Set("Content-Type", "text/xml")
		io.WriteString(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">`+
			`<AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>`+fake.DefaultAWS.AccessKeyID+`</AccessKeyId>`+
			`<SecretAccessKey>`+fake.DefaultAWS.SecretAccessKey+`</SecretAccessKey><SessionToken>session-web</SessionToken>`+
			`<Expiration>`+time.Now().Add(time.Hour).UTC().Format(time.RFC3339)+`</Expiration></Credentials>`+
			`<AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/r/s</Arn><AssumedRoleId>AROA1:s</AssumedRoleId></AssumedRoleUser>`+
			`</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`)
	})
	os.WriteFile(filepath.Join(dir, "token"), []byte("the-oidc-token"), 0o600)
	t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", filepath.Join(dir, "token"))
	t.Setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/r")
	t.Setenv("AWS_ROLE_SESSION_NAME", "s")
	t.Setenv("AWS_ENDPOINT_URL_STS", sts)
	var d net.Dialer
	loopback := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		viaClient.Add(1)
		if !strings.HasPrefix(addr, "127.0.0.1:") {
			return nil, errors.New("test: only the loopback may be dialled, not " + addr)
		}
		return d.DialContext(ctx, network, addr)
	}}}
	defer loopback.CloseIdleConnections()
	s := fake.NewServer("200")
	defer s.Close()
	s.AWS.SessionToken = "session-web"
	sg := signer(t, dialect.SignerOptions{Region: "us-east-1", Client: loopback})
	for range 3 {
		if st, b := call(t, s, sg, "/model/m/converse", "200"); st != 200 {
			t.Fatalf("%d %s", st, b)
		}
	}
	if exchanges.Load() != 1 || viaClient.Load() != 1 || s.Calls() != 3 {
		t.Errorf("%d exchanges at STS (%d through o.Client), %d calls; want 1 (1) and 3", exchanges.Load(), viaClient.Load(), s.Calls())
	}
}

// httptestServer serves h on the loopback until the test ends, and
// returns its URL.
func httptestServer(t *testing.T, h http.HandlerFunc) string {
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}
