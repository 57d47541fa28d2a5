package main

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/sluice-llm/sluice/fake"
)

// fakeCloudHelp is the part of sluice fake's usage about Bedrock and
// Vertex AI.
const fakeCloudHelp = "AWS Bedrock Runtime: POST /model/{modelId}/converse, /converse-stream, /invoke and\n" +
	"/invoke-with-response-stream (InvokeModel with Anthropic's messages body), signed with SigV4 (service\n" +
	"bedrock) by --aws-access-key-id/--aws-secret-access-key for --aws-region, else a 403 with\n" +
	"x-amzn-ErrorType; streams are AWS event-stream frames, errors Bedrock's (429 ThrottlingException,\n" +
	"503 ServiceUnavailableException, …); throttled sends a throttlingException as a stream's first frame.\n\n" +
	"Google Vertex AI: POST /v1/projects/P/locations/L/publishers/google/models/M:generateContent (and\n" +
	":streamGenerateContent) answer as Gemini, …/publishers/anthropic/models/M:rawPredict (and\n" +
	":streamRawPredict) as Anthropic, with a bearer token from the fake's token endpoint, POST /token,\n" +
	"else a 401. --service-account FILE writes a service-account key file whose token_uri is that\n" +
	"endpoint (point GOOGLE_APPLICATION_CREDENTIALS at it); POST /fake/token-endpoint?status=503 takes\n" +
	"the endpoint down, ?status=0 brings it back.\n\n"

// fakeCloud holds the flags of sluice fake for Bedrock and Vertex AI.
type fakeCloud struct {
	accessKey, secretKey, region *string
	serviceAccount               string
	tokenLifetime                *time.Duration
	tokenStatus                  *int
}

// cloudFlags defines the Bedrock and Vertex AI flags on fs.
func cloudFlags(fs *flag.FlagSet) *fakeCloud {
	c := &fakeCloud{
		accessKey:     fs.String("aws-access-key-id", fake.DefaultAWS.AccessKeyID, "the access key Bedrock requests must be signed with"),
		secretKey:     fs.String("aws-secret-access-key", fake.DefaultAWS.SecretAccessKey, "its secret"),
		region:        fs.String("aws-region", fake.DefaultAWS.Region, "the region Bedrock signatures must be scoped to"),
		tokenLifetime: fs.Duration("token-lifetime", time.Hour, "the lifetime (expires_in) of the token endpoint's access tokens"),
		tokenStatus:   fs.Int("token-status", 0, "the status the token endpoint fails every request with, e.g. 503 (0: it works)"),
	}
	fs.StringVar(&c.serviceAccount, "service-account", "", "write a Vertex AI service-account key file for the token endpoint here")
	return c
}

// apply sets the flags on p; it reports false, the problem written to
// stderr, when one is out of range.
func (c *fakeCloud) apply(p *fake.Provider, stderr io.Writer) bool {
	switch {
	case *c.tokenLifetime < time.Second:
		fmt.Fprintf(stderr, "sluice fake: --token-lifetime %v: at least 1s\n", *c.tokenLifetime)
		return false
	case *c.tokenStatus != 0 && (*c.tokenStatus < 400 || *c.tokenStatus > 599):
		fmt.Fprintf(stderr, "sluice fake: --token-status %d: a 4xx or 5xx status, or 0\n", *c.tokenStatus)
		return false
	case *c.accessKey == "" || *c.secretKey == "" || *c.region == "":
		fmt.Fprintln(stderr, "sluice fake: --aws-access-key-id, --aws-secret-access-key and --aws-region must not be empty")
		return false
	}
	p.AWS = fake.AWSCredentials{AccessKeyID: *c.accessKey, SecretAccessKey: *c.secretKey, Region: *c.region}
	p.TokenLifetime = *c.tokenLifetime
	p.FailTokens(*c.tokenStatus)
	return true
}

// writeServiceAccount writes to path the key file of a new service account
// of p whose token_uri is tokenURI.
func writeServiceAccount(p *fake.Provider, path, tokenURI string) error {
	a, err := p.NewServiceAccount(tokenURI)
	if err != nil {
		return err
	}
	return a.WriteFile(path)
}

// vertexLine describes the service-account file for the start line.
func vertexLine(path string) string {
	if path == "" {
		return ""
	}
	return "; Vertex AI service account in " + path
}
