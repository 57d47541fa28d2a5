package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBedrockRegionFromChain: a kind: bedrock provider whose config names
// no region takes the standard AWS chain's (AWS_REGION, else
// AWS_DEFAULT_REGION, else the shared config file's profile), and `serve`
// and `check` agree: both accept it, serve's route goes to that region's
// endpoint; with none named anywhere both refuse it with one line naming
// both fixes.
func TestBedrockRegionFromChain(t *testing.T) {
	dir := t.TempDir()
	profile := filepath.Join(dir, "aws-config")
	if err := os.WriteFile(profile, []byte("[default]\nregion = ap-southeast-2\n\n[profile work]\nregion = eu-central-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\nlog: {attempts: \"-\"}\nstate: {backend: memory, dir: "+dir+"}\n"+
		"providers:\n  bedrock: {kind: bedrock}\nroutes:\n  - {prefix: /bedrock, provider: bedrock}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string // the region taken; "" when refused
	}{
		{"AWS_REGION", map[string]string{"AWS_REGION": "eu-west-3", "AWS_DEFAULT_REGION": "us-west-2"}, "eu-west-3"},
		{"AWS_DEFAULT_REGION", map[string]string{"AWS_DEFAULT_REGION": "us-west-2"}, "us-west-2"},
		{"the default profile", map[string]string{"AWS_CONFIG_FILE": profile}, "ap-southeast-2"},
		{"AWS_PROFILE", map[string]string{"AWS_CONFIG_FILE": profile, "AWS_PROFILE": "work"}, "eu-central-1"},
		{"none", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			for k, v := range map[string]string{"HOME": home, "AWS_CONFIG_FILE": filepath.Join(home, "none"),
				"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(home, "none"), "AWS_PROFILE": "", "AWS_REGION": "",
				"AWS_DEFAULT_REGION": "", "AWS_EC2_METADATA_DISABLED": "true", "SLUICE_CONFIG": ""} {
				t.Setenv(k, v)
			}
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var out strings.Builder
			code := run([]string{"check", "--config", cfg}, strings.NewReader(""), &out, &out)
			if tc.want == "" {
				const want = "providers.bedrock.region: missing; kind bedrock signs each request for a region: write e.g. region: us-east-1, or set AWS_REGION"
				msg := strings.TrimSpace(out.String())
				if code != exitUsage || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
					t.Errorf("check: exit %d, %q; want exit 2 and one line with %q", code, msg, want)
				}
				out.Reset()
				code = run([]string{"serve", "--config", cfg}, strings.NewReader(""), &out, &out)
				msg = strings.TrimSpace(out.String())
				if code != exitUsage || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
					t.Errorf("serve: exit %d, %q; want exit 2 and one line with %q", code, msg, want)
				}
				return
			}
			if code != exitOK {
				t.Errorf("check: exit %d:\n%s", code, out.String())
			}
			p := startSluice(t, nil, "serve", "--config", cfg)
			if want := "/bedrock → https://bedrock-runtime." + tc.want + ".amazonaws.com"; !strings.Contains(p.stderr.String(), want) {
				t.Errorf("serve's start line does not route %s:\n%s", want, p.stderr.String())
			}
			p.cmd.Process.Signal(syscall.SIGINT)
			<-p.done
			p.done <- nil
		})
	}
}
