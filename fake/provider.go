package fake

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/sluice-llm/sluice/dialect/chat"
)

// ScriptHeader is the request header that gives a call's script, in place
// of Provider.Script.
const ScriptHeader = "Sluice-Fake-Script"

// Provider is a scripted fake OpenAI, Anthropic, Gemini, Azure OpenAI,
// AWS Bedrock and Google Vertex AI API, an http.Handler.
// Its zero value answers every call with 200, Bedrock's and Vertex AI's
// once their credentials check out (DefaultAWS; a token of the token
// endpoint). Set its fields before the
// first call; its methods are safe for concurrent use. It keeps every
// request it receives until Reset, so a long-running one should be reset
// now and then. A Provider must not be copied after first use.
type Provider struct {
	// Script is the script of calls without a Sluice-Fake-Script header.
	// If empty, "200".
	Script string

	// KeyScripts gives the script of calls made with a given API key (the
	// Authorization bearer token, else x-api-key), between the
	// Sluice-Fake-Script header, which wins, and Script: a test can rate
	// limit one key of a pool and not another. Keys whose scripts read
	// the same share the script's position. If nil, every key follows
	// Script.
	KeyScripts map[string]string

	// Events is the number of text events in an answer whose step does not
	// say. If zero or less, 5.
	Events int

	// Interval is the pause between the events of a stream whose step does
	// not say. If zero, none.
	Interval time.Duration

	// MaxRequests caps how many of the newest requests Requests keeps, so
	// that a long drill does not grow without bound. If zero, all are kept.
	MaxRequests int

	// RequestsPerMinute, if positive, is how many calls the Provider
	// admits in any 60 seconds; a call over it gets a 429 at once and
	// plays no step. If zero, no limit.
	RequestsPerMinute int

	// TokensPerMinute, if positive, is how many tokens the calls the
	// Provider admits in any 60 seconds may have, a call's tokens being
	// its prompt tokens (body bytes / 4) plus its max_tokens,
	// max_completion_tokens or max_output_tokens (the first positive), else
	// the completion tokens of the answer its step would give. A call over
	// it gets a 429 at once and plays no step. If zero, no limit.
	TokensPerMinute int

	// TokenBucket makes RequestsPerMinute and TokensPerMinute token
	// buckets, as OpenAI and Anthropic describe their limits: each holds a
	// minute's worth, starts full and refills continuously (the limit per
	// minute, a fraction of a unit at a time), a call taking one request
	// and its tokens. The reset headers then say when the buckets are full
	// again, and a 429's Retry-After when the call would fit (in whole
	// seconds, at least 1). If false, the limits count over a sliding 60 s
	// window, which frees a call's units 60 s after it all at once.
	TokenBucket bool

	// Burst, with TokenBucket, is how many requests the request bucket
	// holds when full, in place of a minute's worth: a per-minute limit
	// enforced over shorter spans, as OpenAI says it may be ("60,000
	// requests/minute may be enforced as 1,000 requests/second"). The
	// bucket starts full and still refills at RequestsPerMinute a minute,
	// continuously. The headers then give the minute's limit
	// (x-ratelimit-limit-requests: RequestsPerMinute), the whole requests
	// left in the burst bucket (-remaining-) and when it is full again
	// (-reset-). If zero or less, a minute's worth.
	Burst int

	// TokensBurst is Burst for TokensPerMinute: how many tokens the token
	// bucket holds when full; a call of more tokens never fits. If zero or
	// less, a minute's worth.
	TokensBurst int

	// LimitHeaders is how the answers tell the rate limits: exactly (the
	// zero value), not at all, or overstated. It changes only the headers,
	// never what is admitted, nor a 429's Retry-After.
	LimitHeaders LimitHeaders

	// AWS holds the credentials the Bedrock endpoints check every
	// request's SigV4 signature against (sigv4.go). Fields left empty take
	// DefaultAWS's.
	AWS AWSCredentials

	// TokenLifetime is how long the access tokens of the token endpoint
	// (TokenPath, for Vertex AI) live, their expires_in, in whole seconds.
	// If zero, an hour.
	TokenLifetime time.Duration

	// Chat, if not nil, is the answer of every 2xx answer of a chat
	// endpoint (OpenAI and Azure chat completions, Anthropic messages and
	// Vertex AI's rawPredict, Gemini's generateContent, Bedrock's
	// Converse), in place of the fake's text: written whole by the API's
	// codec (dialect/chat), or streamed with its text blocks and its tool
	// calls' arguments each in 3 pieces, the usage in the stream's end
	// (OpenAI's usage chunk when the request asks). Its id, model and
	// creation time, where it leaves them empty, are the call's. Steps
	// that end a stream early (stall-after, cut-after, error-after) count
	// its events. The other endpoints keep the fake's text.
	Chat *chat.Answer

	// InterleaveCalls makes a streamed Chat answer of several tool calls
	// (and nothing else) interleave their arguments, as some
	// OpenAI-compatible servers do: every call begins, then their
	// arguments' pieces come in turns, the last call's first.
	InterleaveCalls bool

	// Strict makes the chat endpoints check each request against their
	// API's schema as the provider does (strict.go) and answer one it
	// would refuse with its 400, in the API's error shape, naming what is
	// wrong; the call counts (Calls, Requests) and plays no step, as if
	// the script were not there. If false, the fake takes any body.
	Strict bool

	// Now tells the time the rate limits count by and answers are dated
	// with. It is called with the Provider's lock held, so it must not
	// call the Provider. If nil, time.Now.
	Now func() time.Time

	mu       sync.Mutex
	calls    int
	limited  int                  // calls refused by the rate limits
	window   window               // the calls admitted under the rate limits
	bucket   tokenBucket          // the rate limits' buckets, with TokenBucket
	pos      map[string]int       // the next step of each script, by script text
	pickers  map[mixAt]*rand.Rand // the random source of each mix step
	played   map[string]int       // calls by the step they played, as Step.String gives it
	reqs     []Request
	closed   chan struct{} // closed by Close; made on first use
	isClosed bool
	auth     authState // Bedrock's and Vertex AI's credentials (googleauth.go)
}

// LimitHeaders is how a Provider's answers tell its rate limits
// (Provider.LimitHeaders).
type LimitHeaders string

const (
	// LimitHeadersExact sends the dialect's rate-limit headers on every
	// answer, telling the truth: for OpenAI x-ratelimit-limit-,
	// -remaining- and -reset-requests (and -tokens).
	LimitHeadersExact LimitHeaders = ""

	// LimitHeadersNone sends no rate-limit header on any answer: a 429
	// carries only its Retry-After, as Bedrock's ThrottlingException and
	// Vertex AI's RESOURCE_EXHAUSTED tell only a delay.
	LimitHeadersNone LimitHeaders = "none"

	// LimitHeadersOverstate sends the headers with each remaining- count
	// overstated: what is left plus half the limit, at most the limit.
	// With TokenBucket the reset- headers say when the bucket would be
	// full again if that count were true, so that the headers agree with
	// each other; over the sliding window they give the true reset.
	LimitHeadersOverstate LimitHeaders = "overstate"
)

// ParseLimitHeaders reads a LimitHeaders by its name: "exact" (or ""),
// "none" or "overstate".
func ParseLimitHeaders(s string) (LimitHeaders, error) {
	switch s {
	case "", "exact":
		return LimitHeadersExact, nil
	case "none":
		return LimitHeadersNone, nil
	case "overstate":
		return LimitHeadersOverstate, nil
	}
	return "", fmt.Errorf("fake: rate-limit headers %q: want exact, none or overstate", s)
}

// Request is a call the Provider received on an API endpoint.
type Request struct {
	// Method and Path are the request's method and URL path.
	Method string
	Path   string
	// Header is a copy of the request's header, X-Request-Id included.
	Header http.Header
	// Body is the request body as received.
	Body []byte
	// Script is the script the call followed: its Sluice-Fake-Script
	// header, else Provider.Script, else "200".
	Script string
	// Step is the step played, as Step.String gives it (for a Mix step,
	// the step it picked); empty when the script did not parse or the
	// call was rate limited.
	Step string
	// RateLimited tells that the rate limits refused the call with a 429:
	// it played no step.
	RateLimited bool
}

// ServeHTTP answers a call as its script's next step says, or with a 429
// when a rate limit refuses it. Bedrock Runtime's paths (/model/{id}/converse,
// …) and Vertex AI's (…/projects/{p}/locations/{l}/publishers/…) first
// check the call's credentials: a SigV4 signature, a bearer token of the
// token endpoint (POST /token). Paths ending in /chat/completions or
// /responses speak OpenAI (Azure OpenAI under /openai/deployments/{name}/
// and, for Azure clients, /openai/v1/), paths ending in /messages speak
// Anthropic, paths ending in /models/{model}:generateContent (and the
// other Gemini methods) speak Gemini; GET
// /fake/calls reports the call count, the counts of Played and
// RateLimited, and POST /fake/reset calls Reset. Any other path is a 404.
func (p *Provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/fake/calls":
		p.serveCalls(w, r)
		return
	case "/fake/reset":
		p.serveReset(w, r)
		return
	case TokenPath:
		p.serveToken(w, r) // googleauth.go
		return
	case "/fake/token-endpoint":
		p.serveTokenSwitch(w, r)
		return
	}
	d, check := p.cloudDialectFor(r)
	if d == nil {
		d = azureDialectFor(r) // azure.go
	}
	if d == nil {
		d = dialectFor(r.URL.Path)
	}
	if d == nil {
		msg := fmt.Sprintf("Invalid URL (%s %s)", r.Method, r.URL.Path)
		writeJSON(w, http.StatusNotFound, openAI{}.errorBody(http.StatusNotFound, "", msg, ""))
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client went away
	}
	if check != nil && !check(w, r, body) {
		return
	}
	in := readRequest(body)
	if _, ok := d.(gemini); ok {
		in = geminiFields(in, r.URL.Path, body)
	}
	if f, ok := d.(fielded); ok {
		in = f.fields(in, body)
	}
	script := cmp.Or(r.Header.Get(ScriptHeader), p.KeyScripts[apiKey(r.Header)], p.Script, "200")
	steps, err := ParseScript(script)
	bad := ""
	if p.Strict {
		bad = validate(d, body) // strict.go
	}
	step, q := p.next(r, body, in, script, steps, bad != "")
	c := newCall(p, w, r, d, step, in, body)
	if q != nil {
		switch p.LimitHeaders {
		case LimitHeadersNone:
		case LimitHeadersOverstate:
			d.limitHeaders(w.Header(), q.overstated())
		default:
			d.limitHeaders(w.Header(), *q)
		}
		if !q.admitted {
			c.refuse(*q)
			return
		}
	}
	if err != nil {
		c.fail(http.StatusBadRequest, "", err.Error())
		return
	}
	if bad != "" {
		c.fail(http.StatusBadRequest, "", bad)
		return
	}
	c.play()
}

// next counts a call, records it and returns the step it plays; with a
// rate limit set, it also returns the call's quota, and a call the limits
// refuse plays no step; nor does a refused one (Strict).
func (p *Provider) next(r *http.Request, body []byte, in requestFields, script string, steps []Step, refused bool) (Step, *quota) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	req := Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Script: script}
	defer func() {
		p.reqs = append(p.reqs, req)
		if p.MaxRequests > 0 && len(p.reqs) > 2*p.MaxRequests {
			p.reqs = append(p.reqs[:0], p.reqs[len(p.reqs)-p.MaxRequests:]...)
		}
	}()
	if refused {
		return Step{}, nil
	}
	var q *quota
	if p.RequestsPerMinute > 0 || p.TokensPerMinute > 0 {
		out := in.maxOutput()
		if out == 0 {
			out = answerEvents(p.peekLocked(script, steps), p.Events)
		}
		v := p.admitLocked(p.now(), len(body)/4+out)
		if q = &v; !v.admitted {
			p.limited++
			req.RateLimited = true
			return Step{}, q
		}
	}
	var step Step
	if len(steps) > 0 {
		if p.pos == nil {
			p.pos = make(map[string]int)
		}
		n := p.pos[script]
		p.pos[script] = n + 1
		i := min(n, len(steps)-1)
		step = steps[i]
		if step.Kind == Mix {
			step = step.pick(p.pickerLocked(mixAt{script, i}, step.Seed))
		}
		req.Step = step.String()
		if p.played == nil {
			p.played = make(map[string]int)
		}
		p.played[req.Step]++
	}
	return step, q
}

// peekLocked returns the step a script's next call would play, without
// playing it; a Mix step as it stands, before its pick. A script that does
// not parse gives the zero Step.
func (p *Provider) peekLocked(script string, steps []Step) Step {
	if len(steps) == 0 {
		return Step{}
	}
	return steps[min(p.pos[script], len(steps)-1)]
}

// now returns the time by the Provider's clock.
func (p *Provider) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// mixAt names one mix step: its script's text and its index there.
type mixAt struct {
	script string
	index  int
}

// pickerLocked returns the random source of a mix step, seeding it on
// first use.
func (p *Provider) pickerLocked(at mixAt, seed uint64) *rand.Rand {
	r := p.pickers[at]
	if r == nil {
		if p.pickers == nil {
			p.pickers = make(map[mixAt]*rand.Rand)
		}
		r = newPicker(seed)
		p.pickers[at] = r
	}
	return r
}

// Played returns how many calls played each step, keyed by the step as
// Step.String gives it ("503", "reset", "stall", "200", …), since the
// start or the last Reset. A Mix step counts as the step it picked; a
// call whose script did not parse is not counted here.
func (p *Provider) Played() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.played)
}

// RateLimited returns how many calls the rate limits (RequestsPerMinute,
// TokensPerMinute) refused with a 429, since the start or the last Reset.
// They count in Calls, not in Played.
func (p *Provider) RateLimited() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.limited
}

// Calls returns the number of calls received on the API endpoints, for
// every script, rate-limited calls included, since the start or the last
// Reset.
func (p *Provider) Calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// Requests returns a copy of the calls received on the API endpoints since
// the start or the last Reset, in the order they arrived.
func (p *Provider) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	reqs := p.reqs
	if p.MaxRequests > 0 && len(reqs) > p.MaxRequests {
		reqs = reqs[len(reqs)-p.MaxRequests:]
	}
	out := make([]Request, len(reqs))
	for i, r := range reqs {
		r.Header, r.Body = r.Header.Clone(), bytes.Clone(r.Body)
		out[i] = r
	}
	return out
}

// Reset forgets the calls received: the count, the recorded requests, the
// counts of Played and RateLimited, the rate limits' window and every
// script's position, so each script starts again at its first step and
// each mix at its seed's first pick.
func (p *Provider) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls, p.pos, p.reqs, p.pickers, p.played = 0, nil, nil, nil, nil
	p.limited, p.window, p.bucket = 0, window{}, tokenBucket{}
	p.auth.reset()
}

// Close releases every call that hangs, stalls or waits, closing its
// connection, so that a server can shut down at once. Calls that arrive
// later are released at once too. Close does not stop any server.
func (p *Provider) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.isClosed {
		close(p.doneLocked())
		p.isClosed = true
	}
}

// done returns a channel closed by Close.
func (p *Provider) done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.doneLocked()
}

func (p *Provider) doneLocked() chan struct{} {
	if p.closed == nil {
		p.closed = make(chan struct{})
	}
	return p.closed
}

func (p *Provider) serveCalls(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "fake: use GET /fake/calls", http.StatusMethodNotAllowed)
		return
	}
	p.mu.Lock()
	v := struct {
		Calls        int            `json:"calls"`
		Played       map[string]int `json:"played"`
		RateLimited  int            `json:"rate_limited"`
		Unauthorized int            `json:"unauthorized,omitempty"`
		Tokens       int            `json:"tokens_issued,omitempty"`
	}{p.calls, maps.Clone(p.played), p.limited, 0, 0}
	p.mu.Unlock()
	v.Unauthorized, v.Tokens = p.Unauthorized(), p.TokensIssued()
	writeJSON(w, http.StatusOK, marshal(v))
}

func (p *Provider) serveReset(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "fake: use POST /fake/reset", http.StatusMethodNotAllowed)
		return
	}
	p.Reset()
	w.WriteHeader(http.StatusNoContent)
}

// dialectFor returns the API dialect a path speaks, or nil.
func dialectFor(path string) dialect {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return openAI{}
	case strings.HasSuffix(path, "/responses"):
		return responses{}
	case strings.HasSuffix(path, "/messages"):
		return anthropic{}
	}
	return geminiDialect(path)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// Server is a Provider served on a loopback address, for tests.
type Server struct {
	*httptest.Server
	*Provider
}

// NewServer starts a Provider with the given default script on
// 127.0.0.1. The caller should Close it. A script that does not parse makes
// every call without a Sluice-Fake-Script header a 400 naming the problem.
func NewServer(script string) *Server {
	p := &Provider{Script: script}
	return &Server{Server: httptest.NewServer(p), Provider: p}
}

// Close releases the calls that hang or stall, then shuts the server down,
// blocking until every call has returned.
func (s *Server) Close() {
	s.Provider.Close()
	s.Server.Close()
}

// apiKey returns the API key a request carries: its Authorization bearer
// token, else its x-api-key, x-goog-api-key (Gemini) or api-key (Azure);
// "" when none.
func apiKey(h http.Header) string {
	if t, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
		return t
	}
	return cmp.Or(h.Get("X-Api-Key"), h.Get("X-Goog-Api-Key"), h.Get("Api-Key"))
}
