package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/fake"
)

// runFake runs sluice fake: a Provider on --listen until SIGINT or SIGTERM.
func runFake(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	p, listen, saFile, code, ok := parseFake(args, stderr)
	if !ok {
		return code
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintf(stderr, "sluice fake: %v (choose another --listen address)\n", err)
		return exitUsage
	}
	if saFile != "" {
		if err := writeServiceAccount(p, saFile, "http://"+ln.Addr().String()+fake.TokenPath); err != nil {
			ln.Close()
			fmt.Fprintf(stderr, "sluice fake: --service-account: %v\n", err)
			return 1
		}
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		p.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stdout, "sluice fake: listening on http://%s with script %q%s\n", ln.Addr(), p.Script, limitsLine(p))
	fmt.Fprintf(stdout, "sluice fake: Bedrock wants requests signed by access key %s for %s%s\n",
		p.AWS.AccessKeyID, p.AWS.Region, vertexLine(saFile))
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "sluice fake: %v\n", err)
		return 1
	}
	return exitOK
}

// parseFake reads the flags of sluice fake into a Provider and the address
// to listen on; when ok is false the command ends with code, the problem
// already written to stderr.
func parseFake(args []string, stderr io.Writer) (p *fake.Provider, listen, saFile string, code int, ok bool) {
	fs := flag.NewFlagSet("sluice fake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("listen", "127.0.0.1:9090", "address to listen on")
	script := fs.String("script", "200", "default script, e.g. 503,503,200 (a request's Sluice-Fake-Script header wins)")
	events := fs.Int("events", 5, "text events in a streamed answer")
	interval := fs.Duration("interval", 0, "pause between stream events")
	rpm := fs.Int("rpm", 0, "requests per minute admitted over a sliding 60 s window, the rest 429 (0: no limit)")
	tpm := fs.Int("tpm", 0, "tokens per minute admitted over the same window, a call's being body bytes/4 + max_tokens (0: no limit)")
	bucket := fs.Bool("bucket", false, "make --rpm and --tpm token buckets of a minute's worth refilled continuously, not a sliding window")
	burst := fs.Int("burst", 0, "with --bucket, the requests the bucket holds: the minute's limit enforced in bursts (0: a minute's worth)")
	tokensBurst := fs.Int("tokens-burst", 0, "with --bucket, the tokens the token bucket holds (0: a minute's worth)")
	headers := fs.String("limit-headers", "exact", "how answers tell the limits: exact, none (only a 429's Retry-After, as Bedrock and Vertex AI) or overstate")
	strict := fs.Bool("strict", false, "refuse a chat request that breaks its API's rules with the provider's 400 (alternating roles, max_tokens, tool results matching calls, …)")
	chatFile := fs.String("chat", "", "answer every chat call with this answer instead of the fake's text: a file holding an OpenAI chat completion (JSON), answered in each API's shape")
	cloud := cloudFlags(fs)
	fs.Usage = func() { fakeUsage(fs, stderr) }
	if code, ok := parseFlagsOnly(fs, args, stderr, "flags only; a script goes in --script"); !ok {
		return nil, "", "", code, false
	}
	if _, err := fake.ParseScript(*script); err != nil {
		fmt.Fprintf(stderr, "sluice fake: --script: %v\n", err)
		return nil, "", "", exitUsage, false
	}
	for _, f := range []struct {
		name, takes string
		n           int
	}{{"--rpm", "a limit per minute is 0 or more (0 for none)", *rpm}, {"--tpm", "a limit per minute is 0 or more (0 for none)", *tpm},
		{"--burst", "a burst is 0 or more (0: a minute's worth)", *burst}, {"--tokens-burst", "a burst is 0 or more (0: a minute's worth)", *tokensBurst}} {
		if f.n < 0 {
			fmt.Fprintf(stderr, "sluice fake: %s %d: %s\n", f.name, f.n, f.takes)
			return nil, "", "", exitUsage, false
		}
	}
	if (*burst > 0 || *tokensBurst > 0) && !*bucket {
		fmt.Fprintf(stderr, "sluice fake: --burst and --tokens-burst size a token bucket: add --bucket\n")
		return nil, "", "", exitUsage, false
	}
	lh, err := fake.ParseLimitHeaders(*headers)
	if err != nil {
		fmt.Fprintf(stderr, "sluice fake: --limit-headers %q: want exact, none or overstate\n", *headers)
		return nil, "", "", exitUsage, false
	}
	p = &fake.Provider{Script: *script, Events: *events, Interval: *interval, MaxRequests: 1000,
		RequestsPerMinute: *rpm, TokensPerMinute: *tpm, TokenBucket: *bucket, Burst: *burst, TokensBurst: *tokensBurst,
		LimitHeaders: lh, Strict: *strict}
	if *chatFile != "" {
		if p.Chat, err = readChatAnswer(*chatFile); err != nil {
			fmt.Fprintf(stderr, "sluice fake: --chat: %v\n", err)
			return nil, "", "", exitUsage, false
		}
	}
	if !cloud.apply(p, stderr) {
		return nil, "", "", exitUsage, false
	}
	return p, *addr, cloud.serviceAccount, 0, true
}

// readChatAnswer reads the answer of --chat: an OpenAI chat completion.
func readChatAnswer(file string) (*chat.Answer, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	a, err := chat.OpenAI.DecodeAnswer(b)
	if err != nil {
		return nil, fmt.Errorf("%s is not an OpenAI chat completion (%v): write one as /v1/chat/completions answers", file, err)
	}
	return a, nil
}

// limitsLine describes a Provider's rate limits for the start line: empty
// when none is set.
func limitsLine(p *fake.Provider) string {
	var s string
	if p.RequestsPerMinute > 0 {
		s += fmt.Sprintf(", %d requests/min", p.RequestsPerMinute)
	}
	if p.TokensPerMinute > 0 {
		s += fmt.Sprintf(", %d tokens/min", p.TokensPerMinute)
	}
	if s == "" {
		return ""
	}
	if p.TokenBucket {
		s += " (token buckets"
		if p.Burst > 0 {
			s += fmt.Sprintf(", bursts of %d requests", p.Burst)
		}
		if p.TokensBurst > 0 {
			s += fmt.Sprintf(", bursts of %d tokens", p.TokensBurst)
		}
		s += ")"
	}
	if p.LimitHeaders != fake.LimitHeadersExact {
		s += fmt.Sprintf(", rate-limit headers %s", p.LimitHeaders)
	}
	return s
}

// fakeUsage writes the usage of sluice fake.
func fakeUsage(fs *flag.FlagSet, stderr io.Writer) {
	fmt.Fprintf(stderr, "Usage: sluice fake [--listen ADDR] [--script STEPS] [--rpm N] [--tpm N] [--bucket [--burst N]\n"+
		"                   [--tokens-burst N]] [--limit-headers exact|none|overstate] [--service-account FILE]\n"+
		"                   [--strict] [--chat FILE]\n\n"+
		"Runs a fake OpenAI (/v1/chat/completions, /v1/responses), Anthropic (/v1/messages) and Gemini\n"+
		"(/v1beta/models/MODEL:generateContent, :streamGenerateContent, :countTokens, :embedContent) API that\n"+
		"follows a script, for drills against real agents. GET /fake/calls counts the calls, the steps\n"+
		"they played and the calls rate limited.\n\n"+
		"Azure OpenAI: /openai/deployments/{deployment}/chat/completions (and /responses), and\n"+
		"/openai/v1/chat/completions (and /responses) with an api-version or api-key, answer as OpenAI;\n"+
		"their 429s speak Azure (\"… have exceeded token rate limit … Please retry after N seconds.\")\n"+
		"with retry-after-ms and Retry-After; 429:insufficient_quota is Azure's \"call volume quota\".\n\n"+
		fakeCloudHelp+
		"Steps: 200, 503, 429:retry-after=2, hang, reset, slow:DUR, overloaded, stream:stall-after=N,\n"+
		"stall (200, part of the answer, then silence), cut (the same, then the connection closes), and\n"+
		"random faults with a seed, the rest 200: mix:503=10%%;reset=5%%;hang=1%%;stall=2%%;seed=7\n"+
		"(see go doc github.com/sluice-llm/sluice/fake). overloaded answers as an overloaded provider: a\n"+
		"request for a stream gets 200 and the overloaded error as its first event, any other the API's\n"+
		"plain error (Anthropic 529 overloaded_error; OpenAI, Azure and Gemini 503).\n\n"+
		"Rate limits: --rpm and --tpm make it a rate-limited provider. Over a sliding 60 s window of the\n"+
		"calls it admitted, a call over a limit gets a 429 at once (plays no step) with Retry-After, in the\n"+
		"API's shape; every answer carries the API's rate-limit headers (x-ratelimit-*-requests/-tokens,\n"+
		"anthropic-ratelimit-requests/tokens-*; Gemini: none, a RetryInfo retryDelay in the 429's body).\n"+
		"A call's tokens are its body bytes / 4 plus its max_tokens (max_completion_tokens,\n"+
		"max_output_tokens, Gemini's generationConfig.maxOutputTokens), else the answer's text events.\n"+
		"--bucket makes the limits token buckets refilled continuously; --burst (--tokens-burst) makes them\n"+
		"hold less than a minute's worth, a limit enforced in short bursts while the headers still give the\n"+
		"minute's; --limit-headers none sends no rate-limit header (a 429 tells only its Retry-After, as\n"+
		"Bedrock and Vertex AI do), overstate sends headers that overstate what is left.\n\nFlags:\n")
	fs.PrintDefaults()
	fmt.Fprintf(stderr, "\nScript steps (comma-separated; each call plays the next step, the last repeats;\n"+
		"a request's Sluice-Fake-Script header overrides --script; modifiers join with \";\"):\n")
	tw := tabwriter.NewWriter(stderr, 0, 0, 2, ' ', 0)
	for _, s := range fakeSteps {
		fmt.Fprintf(tw, "  %s\t%s\te.g. %s\n", s.step, s.does, s.example)
	}
	tw.Flush()
}
