package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"golang.org/x/oauth2/google"

	"github.com/sluice-llm/sluice/fake"
)

// TestFakeCloudFlags: the Bedrock flags set the credentials the fake
// checks signatures against, --service-account's file gets a token from
// the fake's token endpoint, and --token-status takes that endpoint down.
func TestFakeCloudFlags(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	var errOut strings.Builder
	p, _, sa, _, ok := parseFake([]string{"--listen", "127.0.0.1:0", "--aws-access-key-id", "AKIADRILL",
		"--aws-secret-access-key", "drill-secret", "--aws-region", "eu-west-1", "--token-lifetime", "90s",
		"--service-account", "sa.json"}, &errOut)
	if !ok || sa != "sa.json" || p.TokenLifetime != 90*time.Second ||
		p.AWS != (fake.AWSCredentials{AccessKeyID: "AKIADRILL", SecretAccessKey: "drill-secret", Region: "eu-west-1"}) {
		t.Fatalf("parseFake: %v %q: %+v %q", ok, errOut.String(), p, sa)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()

	body := `{"messages":[{"role":"user","content":[{"text":"hi"}]}]}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/model/anthropic.claude-3-haiku-20240307-v1:0/converse",
		strings.NewReader(body))
	sum := sha256.Sum256([]byte(body))
	creds := aws.Credentials{AccessKeyID: "AKIADRILL", SecretAccessKey: "drill-secret"}
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "bedrock",
		"eu-west-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("signed with the flags' key: %d", resp.StatusCode)
	}

	path := filepath.Join(t.TempDir(), "sa.json")
	if err := writeServiceAccount(p, path, srv.URL+fake.TokenPath); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gc, err := google.CredentialsFromJSONWithTypeAndParams(context.Background(), b, google.ServiceAccount,
		google.CredentialsParams{Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := gc.TokenSource.Token(); err != nil || p.TokensIssued() != 1 ||
		time.Until(tok.Expiry) > 90*time.Second {
		t.Errorf("token: %v, %d issued", err, p.TokensIssued())
	}

	p, _, _, _, ok = parseFake([]string{"--listen", "127.0.0.1:0", "--token-status", "503"}, &errOut)
	if !ok {
		t.Fatal(errOut.String())
	}
	tok := httptest.NewRecorder()
	p.ServeHTTP(tok, httptest.NewRequest(http.MethodPost, fake.TokenPath, strings.NewReader("")))
	if tok.Code != 503 {
		t.Errorf("--token-status 503: the endpoint answered %d", tok.Code)
	}
	for _, args := range [][]string{{"--token-status", "200"}, {"--token-lifetime", "0s"}, {"--aws-region", ""}} {
		var errOut strings.Builder
		if _, _, _, code, ok := parseFake(append([]string{"--listen", "127.0.0.1:0"}, args...), &errOut); ok ||
			code != exitUsage || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%v: ok %v code %d %q; want one line of usage error", args, ok, code, errOut.String())
		}
	}
}
