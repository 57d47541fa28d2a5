package main

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

// fakeUpstream is the fake provider of `sluice serve --fake`: served in
// the gateway's process on a free loopback port, with every provider of
// the config pointed at it, so that a first call needs no key and no
// network.
type fakeUpstream struct {
	p   *fake.Provider
	srv *http.Server
	url string // http://127.0.0.1:PORT
	dir string // the credentials files written for Bedrock and Vertex AI
	sa  string // the Vertex AI service-account file, written once
	aws string // the AWS shared credentials file, written once

	mu      sync.Mutex
	keyVars map[string]bool // the variables the config's providers read keys from
}

// startFakeUpstream starts the fake on 127.0.0.1 on a free port.
func startFakeUpstream() (*fakeUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("--fake: %v", err)
	}
	dir, err := os.MkdirTemp("", "sluice-fake-")
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("--fake: a directory for its credentials files: %v", err)
	}
	f := &fakeUpstream{p: &fake.Provider{Script: "200", MaxRequests: 1000}, url: "http://" + ln.Addr().String(), dir: dir}
	f.srv = &http.Server{Handler: f.p, ReadHeaderTimeout: 10 * time.Second}
	go f.srv.Serve(ln)
	return f, nil
}

// apply points every provider of cfg at the fake and keeps the run apart
// from a real gateway's: state in memory, the attempt log on stdout,
// tracing off. Bedrock providers sign with the fake's own credentials
// (a shared credentials file; AWS_ACCESS_KEY_ID in the environment would
// still win, and the fake would refuse its signatures) in its region;
// Vertex AI providers take their tokens from the fake's token endpoint.
func (f *fakeUpstream) apply(cfg *config.Config) error {
	f.mu.Lock()
	f.keyVars = map[string]bool{}
	f.mu.Unlock()
	for name, p := range cfg.Providers {
		p.BaseURL = f.url
		f.keyVar(p.APIKeyEnv)
		for _, k := range p.APIKeys {
			f.keyVar(k.Env)
		}
		switch p.Kind {
		case "bedrock":
			if err := f.awsFile(); err != nil {
				return err
			}
			p.Region, p.CredentialsFile = fake.DefaultAWS.Region, f.aws
		case "vertex":
			if err := f.serviceAccount(); err != nil {
				return err
			}
			p.CredentialsFile = f.sa
		}
		cfg.Providers[name] = p
	}
	cfg.State = config.State{Backend: config.BackendMemory}
	cfg.Log.Attempts = "-"
	cfg.Tracing.Enabled = false
	return nil
}

// keyVar notes that a provider reads its key from the variable name.
func (f *fakeUpstream) keyVar(name string) {
	if name == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.keyVars[name] = true
}

// getenv is the gateway's environment under --fake: a provider's key
// variable that is unset or empty reads as a placeholder, since the fake
// takes any key; every other variable is the process's.
func (f *fakeUpstream) getenv(name string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keyVars[name] {
		return "sluice-fake-key-" + name
	}
	return ""
}

// awsFile writes the AWS shared credentials file of the fake's keys, for
// the default profile and $AWS_PROFILE's.
func (f *fakeUpstream) awsFile() error {
	if f.aws != "" {
		return nil
	}
	path := filepath.Join(f.dir, "aws-credentials")
	var text string
	for _, profile := range []string{"default", cmp.Or(os.Getenv("AWS_PROFILE"), "default")} {
		text += fmt.Sprintf("[%s]\naws_access_key_id = %s\naws_secret_access_key = %s\n",
			profile, fake.DefaultAWS.AccessKeyID, fake.DefaultAWS.SecretAccessKey)
		if os.Getenv("AWS_PROFILE") == "" {
			break
		}
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return fmt.Errorf("--fake: %v", err)
	}
	f.aws = path
	return nil
}

// serviceAccount writes a Vertex AI service-account key file whose
// token_uri is the fake's token endpoint.
func (f *fakeUpstream) serviceAccount() error {
	if f.sa != "" {
		return nil
	}
	path := filepath.Join(f.dir, "vertex-sa.json")
	if err := writeServiceAccount(f.p, path, f.url+fake.TokenPath); err != nil {
		return fmt.Errorf("--fake: %v", err)
	}
	f.sa = path
	return nil
}

// close stops the fake and removes its credentials files.
func (f *fakeUpstream) close() {
	if f == nil {
		return
	}
	f.p.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	f.srv.Shutdown(ctx)
	os.RemoveAll(f.dir)
}
