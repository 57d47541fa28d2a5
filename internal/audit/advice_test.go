package audit

import (
	"strings"
	"testing"
)

// TestTimeoutAdvice checks the timeout advice of every language: a little
// above the gateway's total, with the SDK's retries at 0, so that the
// gateway's own 504 reaches the caller before the SDK gives up (an SDK
// timeout under the gateway's total cuts the gateway off mid-retry and,
// with SDK retries on, starts the whole chain again).
func TestTimeoutAdvice(t *testing.T) {
	tests := []struct {
		name, file, src, retriesZero string
	}{
		{"python", "a.py", "from openai import OpenAI\nc = OpenAI(max_retries=0)\n", "max_retries=0"},
		{"javascript", "a.ts", "import OpenAI from 'openai';\nconst c = new OpenAI({ maxRetries: 0 });\n", "maxRetries: 0"},
		{"go", "a.go", "package a\nimport (\n\"github.com/openai/openai-go/v3\"\n\"github.com/openai/openai-go/v3/option\"\n)\nvar c = openai.NewClient(option.WithMaxRetries(0))\n", "option.WithMaxRetries(0)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(tree(t, map[string]string{tt.file: tt.src}))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("findings %+v, want one timeout finding", got)
			}
			fix := got[0].Fix
			for _, want := range []string{"a little above the gateway's total", "total + 5 s", tt.retriesZero} {
				if !strings.Contains(fix, want) {
					t.Errorf("fix %q does not say %q", fix, want)
				}
			}
			if strings.Contains(fix, "no longer than") {
				t.Errorf("fix %q still says the SDK timeout should not exceed the gateway's total", fix)
			}
		})
	}
}

// TestBedrockVertexThroughGateway checks that Anthropic's Bedrock and
// Vertex AI clients, which the gateway fronts (kinds bedrock and vertex)
// and which obey x-should-retry like any Anthropic client, are advised
// like the others: retries at 0, a timeout above the gateway's total.
func TestBedrockVertexThroughGateway(t *testing.T) {
	tests := []struct {
		name, file, src string
		words           dialect
	}{
		{"python bedrock", "a.py", "from anthropic import AnthropicBedrock\nc = AnthropicBedrock(aws_region='us-east-1')\n", python},
		{"python async vertex", "a.py", "import anthropic\nc = anthropic.AsyncAnthropicVertex(region='us-east5', max_retries=4)\n", python},
		{"js bedrock", "a.mjs", "import { AnthropicBedrock } from '@anthropic-ai/bedrock-sdk';\nconst c = new AnthropicBedrock({ awsRegion: 'us-east-1' });\n", javascript},
		{"ts vertex", "a.ts", "import AnthropicVertex from '@anthropic-ai/vertex-sdk';\nconst c = new AnthropicVertex({ maxRetries: 5 });\n", javascript},
		{"go bedrock", "a.go", "package a\nimport (\n\"github.com/anthropics/anthropic-sdk-go\"\n\"github.com/anthropics/anthropic-sdk-go/bedrock\"\n)\nvar c = anthropic.NewClient(bedrock.WithLoadDefaultConfig(nil))\n", golang},
		{"go vertex", "a.go", "package a\nimport (\n\"github.com/anthropics/anthropic-sdk-go\"\n\"github.com/anthropics/anthropic-sdk-go/vertex\"\n)\nvar c = anthropic.NewClient(vertex.WithGoogleAuth(nil, \"r\", \"p\"))\n", golang},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(tree(t, map[string]string{tt.file: tt.src}))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("findings %+v, want two: retries and timeout", got)
			}
			if got[0].Fix != tt.words.setRetries || !strings.Contains(got[0].Problem, "obeys the gateway's x-should-retry: false") {
				t.Errorf("retries finding %+v, want the gateway's advice (%q)", got[0], tt.words.setRetries)
			}
			if got[1].Fix != tt.words.setTimeout || strings.Contains(got[1].Problem, "directly") {
				t.Errorf("timeout finding %+v, want the gateway's advice (%q)", got[1], tt.words.setTimeout)
			}
		})
	}
}

// TestCloudSDKAdvice checks the words for the SDKs that do not read
// x-should-retry (the AWS SDKs, google-genai): the finding says so and
// counts the sends, and the fix asks for one attempt with that SDK's
// option — for botocore, whose retries dict's max_attempts counts
// retries, total_max_attempts 1 or max_attempts 0.
func TestCloudSDKAdvice(t *testing.T) {
	tests := []struct {
		name, file, src, sends, fix string
	}{
		{"js bedrock", "a.mjs", "import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';\nconst c = new BedrockRuntimeClient({ requestHandler: { requestTimeout: 35000 } });\n", "up to 3 times", "maxAttempts: 1"},
		{"boto3", "a.py", "import boto3\nfrom botocore.config import Config\nc = boto3.client('bedrock-runtime', config=Config(read_timeout=35, retries={'max_attempts': 2}))\n", "up to 3 times", "'total_max_attempts': 1"},
		{"boto3 defaults", "a.py", "import boto3\nc = boto3.client('bedrock-runtime', config=None)\n", "up to 5 times", "{'max_attempts': 0}"},
		{"go bedrock", "a.go", "package a\nimport \"github.com/aws/aws-sdk-go-v2/service/bedrockruntime\"\nvar c = bedrockruntime.New(bedrockruntime.Options{RetryMaxAttempts: 4, HTTPClient: x})\n", "up to 4 times", "o.RetryMaxAttempts = 1"},
		{"python genai", "a.py", "from google import genai\nc = genai.Client(http_options={'timeout': 35000, 'retry_options': {}})\n", "up to 5 times", "attempts=1"},
		{"js genai", "a.ts", "import { GoogleGenAI } from '@google/genai';\nconst c = new GoogleGenAI({ httpOptions: { timeout: 35000, retryOptions: { attempts: 2 } } });\n", "up to 2 times", "attempts: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(tree(t, map[string]string{tt.file: tt.src}))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				t.Fatal("no findings, want one for the retries")
			}
			f := got[0]
			for _, want := range []string{"does not read the gateway's x-should-retry: false", tt.sends} {
				if !strings.Contains(f.Problem, want) {
					t.Errorf("problem %q does not say %q", f.Problem, want)
				}
			}
			if !strings.Contains(f.Fix, tt.fix) || !strings.Contains(f.Fix, "let the gateway retry") {
				t.Errorf("fix %q does not say %q and let the gateway retry", f.Fix, tt.fix)
			}
		})
	}
}

// TestBedrockJSTimeoutAdvice checks that the timeout advice for the AWS
// SDK for JavaScript keeps its default handler, which speaks HTTP/2 (the
// gateway serves h2c), and names requestTimeout in milliseconds.
func TestBedrockJSTimeoutAdvice(t *testing.T) {
	src := "import { BedrockRuntimeClient } from '@aws-sdk/client-bedrock-runtime';\nconst c = new BedrockRuntimeClient({ maxAttempts: 1 });\n"
	got, err := Scan(tree(t, map[string]string{"a.mjs": src}))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Line != 2 {
		t.Fatalf("findings %+v, want one timeout finding on line 2", got)
	}
	for _, want := range []string{"requestHandler: { requestTimeout: … } in milliseconds", "HTTP/2", "h2c", "maxAttempts: 1", "total + 5 s"} {
		if !strings.Contains(got[0].Fix, want) {
			t.Errorf("fix %q does not say %q", got[0].Fix, want)
		}
	}
}
