package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/dialect"
)

// Every dialect's kind is a kind a provider may have, and no other: the
// config asks package dialect, and the fix of a missing or misspelt kind
// names the dialects it has.
func TestKindsAreTheDialects(t *testing.T) {
	for _, k := range dialect.Kinds() {
		src := "providers: {p: {kind: " + k + ", base_url: \"https://h.example\"}}\nroutes: [{prefix: /p, provider: p}]\n"
		if _, regional := dialect.RegionalBaseURL(k, ""); regional {
			src = "providers: {p: {kind: " + k + ", region: us-east-1, base_url: \"https://h.example\"}}\nroutes: [{prefix: /p, provider: p}]\n"
		}
		c, err := Parse([]byte(src))
		if err != nil || c.Providers["p"].Kind != k {
			t.Errorf("kind %s: %v", k, err)
		}
	}
	_, err := Parse([]byte("providers: {groq: {base_url: \"https://x\"}}\n"))
	if list := "or one of " + strings.Join(dialect.Kinds(), ", "); err == nil || !strings.Contains(err.Error(), list) {
		t.Errorf("a missing kind: %v, want the fix to list every kind: %s", err, list)
	}
	_, err = Parse([]byte("providers: {g: {kind: antropic, base_url: \"https://x\"}}\n"))
	if err == nil || !strings.Contains(err.Error(), `providers.g.kind: unknown kind "antropic" (did you mean anthropic?)`) {
		t.Errorf("a misspelt kind: %v", err)
	}
	_, err = Parse([]byte("providers: {g: {kind: cohere, base_url: \"https://x\"}}\n"))
	for _, k := range dialect.Kinds() {
		if err == nil || !strings.Contains(err.Error(), k) {
			t.Errorf("a kind far from any: %v, want the dialects' kinds listed (%s)", err, k)
		}
	}
}

// writeFile writes a file of content in a new temporary directory and
// returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// region and credentials_file: a region that looks like one, a file that
// can be read, and neither on a kind that sends a key (every kind the
// dialect package has yet): each refusal one line naming the key and the
// fix.
func TestRegionAndCredentialsFile(t *testing.T) {
	file := writeFile(t, `{"type":"service_account"}`)
	for _, tc := range []struct{ name, fields, want string }{
		{"region with a space", `region: "us east 1"`, `providers.p.region: "us east 1" is not a region: lower-case letters, digits and dashes, e.g. us-east-1`},
		{"region upper case", `region: US-EAST-1`, `providers.p.region: "US-EAST-1" is not a region`},
		{"region with a dot", `region: us.east`, `providers.p.region: "us.east" is not a region`},
		{"region with a slash", `region: "us-east-1/x"`, `providers.p.region: "us-east-1/x" is not a region`},
		{"region ending in a dash", `region: us-east-`, `providers.p.region: "us-east-" is not a region`},
		{"region on a kind that sends a key", `region: us-east-1`, "providers.p.region: kind openai sends a key and signs nothing, so it takes no region; remove region"},
		{"credentials file missing", `credentials_file: /nonexistent/sa.json`,
			`providers.p.credentials_file: cannot read "/nonexistent/sa.json": no such file or directory; give the path of a readable credentials file, or remove credentials_file`},
		{"credentials file a directory", `credentials_file: "` + filepath.Dir(file) + `"`, "providers.p.credentials_file: cannot read " + quote(filepath.Dir(file)) + ": it is a directory"},
		{"credentials file a device", `credentials_file: /dev/null`, `providers.p.credentials_file: cannot read "/dev/null": it is not a regular file`},
		{"credentials file on a kind that sends a key", `credentials_file: "` + file + `"`,
			"providers.p.credentials_file: kind openai sends a key and signs nothing, so it takes no credentials file; remove credentials_file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "providers: {p: {kind: openai, base_url: \"https://h.example\", " + tc.fields + "}}\nroutes: [{prefix: /p, provider: p}]\n"
			_, err := Parse([]byte(src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v\nwant it to contain %s", err, tc.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "config: ") || strings.ContainsAny(msg, "\n\r") || !strings.Contains(msg, "at line 1") {
				t.Errorf("error %q is not one line starting with config: and giving the line", msg)
			}
		})
	}
}

// signer is a dialect that signs its requests, as Bedrock's and Vertex
// AI's do: it takes a region and a credentials file.
type signer struct{ dialect.Dialect }

func (s signer) Traits() dialect.Traits {
	t := s.Dialect.Traits()
	t.Signs = true
	return t
}

// What a signing kind takes and needs: checkSigning asks the dialect
// whether it signs, and the regional kinds' rules hold (bedrock: a region
// always, since each signature names it; vertex: a region unless
// base_url is given).
func TestCheckSigning(t *testing.T) {
	file := writeFile(t, `{"type":"service_account"}`)
	plain := dialect.OpenAI
	for _, tc := range []struct {
		name string
		d    dialect.Dialect
		pr   Provider
		want string // "" for none
	}{
		{"a signing dialect takes a region", signer{plain}, Provider{Kind: "signs", Region: "eu-west-3"}, ""},
		{"and a credentials file", signer{plain}, Provider{Kind: "signs", CredentialsFile: file}, ""},
		{"and needs neither", signer{plain}, Provider{Kind: "signs"}, ""},
		{"a bad region even so", signer{plain}, Provider{Kind: "signs", Region: "eu west"}, `providers.p.region: "eu west" is not a region`},
		{"an unreadable file even so", signer{plain}, Provider{Kind: "signs", CredentialsFile: file + ".gone"}, "providers.p.credentials_file: cannot read"},
		{"a plain dialect takes no region", plain, Provider{Kind: "plain", Region: "eu-west-3"}, "providers.p.region: kind plain sends a key and signs nothing"},
		{"bedrock with its region", dialect.Bedrock, Provider{Kind: "bedrock", Region: "us-west-2"}, ""},
		{"bedrock without a region", dialect.Bedrock, Provider{Kind: "bedrock"}, "providers.p.region: missing; kind bedrock signs each request for a region: write e.g. region: us-east-1"},
		{"bedrock without a region, base_url given", dialect.Bedrock, Provider{Kind: "bedrock", BaseURL: "http://127.0.0.1:9"}, "providers.p.region: missing; kind bedrock signs"},
		{"vertex with its region", dialect.Vertex, Provider{Kind: "vertex", Region: "us-central1"}, ""},
		{"vertex with a base_url", dialect.Vertex, Provider{Kind: "vertex", BaseURL: "http://127.0.0.1:9"}, ""},
		{"vertex with neither", dialect.Vertex, Provider{Kind: "vertex"}, "providers.p.region: missing; kind vertex needs its region (location) for its address, e.g. region: us-central1, or a base_url"},
		{"vertex's credentials file", dialect.Vertex, Provider{Kind: "vertex", Region: "global", CredentialsFile: file}, ""},
	} {
		err := checkSigning("providers.p", tc.d, tc.pr)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want none", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}

// A regional kind's address follows from its region
// (dialect.RegionalBaseURL); Parse fills it in when base_url is not
// given.
func TestRegionalBaseURL(t *testing.T) {
	for _, kind := range dialect.Kinds() {
		want, regional := dialect.RegionalBaseURL(kind, "us-east-1")
		if !regional {
			continue
		}
		c, err := Parse([]byte("providers: {p: {kind: " + kind + ", region: us-east-1}}\nroutes: [{prefix: /p, provider: p}]\n"))
		if err != nil || want == "" || c.Providers["p"].BaseURL != want {
			t.Errorf("kind %s with a region only: %+v, %v; want base_url %s", kind, c.Providers["p"], err, want)
		}
	}
}

// A bedrock provider whose file names no region takes the AWS chain's,
// and its address from it; a chain's region that is not one, or a chain
// that cannot be read (AWS_PROFILE naming no profile), is named in the
// one-line error.
func TestBedrockRegionOfChain(t *testing.T) {
	home := t.TempDir()
	for k, v := range map[string]string{"HOME": home, "AWS_CONFIG_FILE": home + "/none", "AWS_SHARED_CREDENTIALS_FILE": home + "/none",
		"AWS_PROFILE": "", "AWS_DEFAULT_REGION": "", "AWS_REGION": "eu-north-1"} {
		t.Setenv(k, v)
	}
	const src = "providers: {b: {kind: bedrock}}\nroutes: [{prefix: /b, provider: b}]\n"
	c, err := Parse([]byte(src))
	if err != nil || c.Providers["b"].Region != "eu-north-1" || c.Providers["b"].BaseURL != "https://bedrock-runtime.eu-north-1.amazonaws.com" {
		t.Fatalf("Parse: %+v, %v; want region eu-north-1 and its address", c.Providers["b"], err)
	}
	if c, err := Parse([]byte("providers: {b: {kind: bedrock, region: us-east-2}}\nroutes: [{prefix: /b, provider: b}]\n")); err != nil || c.Providers["b"].Region != "us-east-2" {
		t.Errorf("the file's region: %v, %v; want us-east-2 over AWS_REGION", c, err)
	}
	t.Setenv("AWS_REGION", "US East 1")
	if _, err = Parse([]byte(src)); err == nil || !strings.Contains(err.Error(), `providers.b.region: missing, and the standard chain's, "US East 1", is not a region`) {
		t.Errorf("Parse with AWS_REGION=\"US East 1\": %v; want the chain's region named as not one", err)
	}
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_PROFILE", "nosuch")
	_, err = Parse([]byte(src))
	if err == nil || !strings.Contains(err.Error(), "providers.b.region: missing, and the standard chain's cannot be read") ||
		!strings.Contains(err.Error(), "nosuch") || strings.Contains(err.Error(), "\n") {
		t.Errorf("Parse with AWS_PROFILE=nosuch: %v; want one line naming the profile", err)
	}
}
