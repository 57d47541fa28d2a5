package sluice

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/internal/request"
)

// Transport is an http.RoundTripper that makes a call to an LLM provider
// resilient: per-phase timeouts, retries of the retryable only with
// full-jitter backoff, a circuit breaker asked before every attempt, a retry
// budget across calls, a request id on every call and a log line per
// attempt.
//
// Inside one RoundTrip, each attempt goes Limiter → Keys → breaker →
// Base; after a failure, a retry takes a token of the retry budget, or
// the call falls back to the next target (see the package doc).
// A final status, success or not, is returned as a response with err nil;
// its body is bounded by the idle and total timeouts and reports the
// attempt's outcome at its end, so that a stream is judged when it ends.
//
// Set the fields before the first call and do not change them after. A
// Transport is safe for concurrent use.
type Transport struct {
	// Base makes each attempt. If nil, an http.Transport whose dial and
	// TLS handshake are bounded by Policy.Timeout.Connect.
	Base http.RoundTripper

	// Policy says how calls are timed, retried and guarded. The zero value
	// is the interactive policy.
	Policy Policy

	// Provider names the upstream in breaker names and the attempt log.
	// If empty, the request's host is used.
	Provider string

	// Store keeps the breakers' state. Share one Store (a file or Redis
	// store, or one Memory) between Transports to share their breakers.
	// If nil, a Memory store private to this Transport.
	Store breaker.Store

	// Log receives one line per attempt. If nil, nothing is logged.
	Log *AttemptLog

	// Observe, if set, is called with every attempt after it is logged
	// (for metrics). It must not keep the pointer.
	Observe func(*Attempt)

	// RetrySafe reports whether a non-idempotent request (a method other
	// than GET, HEAD or OPTIONS, without an Idempotency-Key header) may be
	// sent again after it may have reached the provider. If nil, requests
	// to LLM endpoints (paths ending in /chat/completions, /completions,
	// /messages, /responses, /embeddings, and Gemini's
	// /models/{model}:generateContent and its siblings) are retry-safe and others are
	// retried only when their connection was never made.
	RetrySafe func(*http.Request) bool

	// Meter caps what calls may cost and prices them (spend.Meter). If
	// nil, calls are neither capped nor priced.
	Meter Meter

	// Limiter keeps calls under rate limits by making each attempt wait
	// for its turn (limit.Limiter), and learns from each answer when the
	// provider says to hold off. If nil, attempts never wait for a slot.
	Limiter Limiter

	// Keys, if set, gives each attempt one of a pool of credentials and
	// learns which are paused or out (see Keys). If nil, requests keep the
	// credentials they carry.
	Keys Keys

	// BufferBody makes each attempt read a successful answer that is not a
	// stream whole, up to 8 MiB, before RoundTrip returns it, each read
	// bounded by Policy.Timeout.Idle. A body that stalls or is cut on the
	// way then fails its attempt, which is retried under the policy like
	// any other failure, instead of failing in the caller's hands; a longer
	// body is handed over as read so far plus the rest. A server relaying
	// answers (the gateway) sets it, so that nothing reaches its client
	// before the answer is whole. If false (the default), the body is read
	// as the caller reads it.
	BufferBody bool

	// Fallbacks are tried in order when the primary cannot answer: its
	// attempts ran out on a retryable failure, its breaker is open, it did
	// not answer in time (a first-byte timeout moves on at once instead of
	// retrying the silent target), or it refused the request for a reason
	// another model may not share (Retry.FallbackMarkers, such as
	// context_length_exceeded). Never after a byte reached the caller, never
	// on auth, quota or content-policy errors; all within the one
	// Timeout.Total. Each target has its own breaker.
	Fallbacks []Target

	// Models declares what the Provider's models can take (ModelLimits):
	// a target, the primary or a fallback, whose model cannot take the
	// request is skipped without a call, with one log line
	// (OutcomeSkipped, its error "skipped: " and a *LimitError's reason),
	// and the call goes on to the next. The primary is checked only when
	// a fallback follows it; when it was skipped and no target was called
	// after it, every fallback skipped too, it is called after all, so
	// that the client gets its own answer. The request is read for it
	// (into the chat model, once per call) only when the target's model
	// has a declaration. If nil, none: nothing is read or skipped.
	Models []ModelLimits

	// KeepShouldRetry, if true, hands the provider's x-should-retry header
	// back as it came. If false (the default), every response RoundTrip
	// returns carries x-should-retry: false, since it comes after this
	// Transport's own retry decision: an SDK that honours the header (the
	// OpenAI and Anthropic SDKs do) then does not multiply the attempts
	// with its own retries. Set it when the caller's retries should be the
	// only ones, as with Policy.Retry.MaxAttempts 1.
	KeepShouldRetry bool

	// Tracer, if set, traces each upstream attempt and puts its trace
	// context on the attempt's request (see Tracer). If nil, nothing is
	// traced and the request's headers go as they came.
	Tracer Tracer

	// Answers, if set, keeps the answer to each request that carries an
	// Idempotency-Key header (1–255 printable ASCII bytes) and replays it
	// to a duplicate: the same provider, caller (its credential) and key,
	// with the same method, path, query and body. A duplicate of a call
	// still in flight (in any process sharing the store) waits for it at
	// most the call's total, then gets *InProgressError; the key sent
	// with another request gets ErrIdempotencyKeyReused. Only a whole 2xx
	// answer, read by the caller to its end, is kept (for AnswerTTL); a
	// replay carries Idempotent-Replayed: true and Sluice-Replay-Of, makes
	// no upstream call and spends nothing. Use idempotency.File or
	// redisstore.Store to remember across restarts and hosts. A store that
	// fails lets the call run as if it had no key. If nil, the header only
	// makes a request retry-safe.
	Answers idempotency.Store

	// AnswerTTL is how long Answers keeps an answer. If zero, 24h.
	AnswerTTL time.Duration

	// AnswerMax is the longest answer Answers keeps, in bytes: a longer
	// one is handed over whole and not kept. If zero, 8 MiB
	// (idempotency.DefaultMaxAnswer).
	AnswerMax int64

	// AnswerScope names this Transport's calls in a kept answer's
	// identity, with the caller (Body.Caller's ID, else the credentials
	// the request carries) and the key. If empty, Provider, else the
	// request's host. A gateway gives each route its own.
	AnswerScope string

	// RetryBudget caps the retries of the calls to Provider, shared with
	// every Transport that calls it. If nil, a budget private to this
	// Transport.
	RetryBudget *RetryBudget
	// Dialect is the API the calls speak (dialect.OpenAI, …): where a
	// request names its model and its stream, how the provider's errors
	// and streams look. If nil, each call's URL path chooses
	// (dialect.ForPath).
	Dialect dialect.Dialect
	// Signer, if set, signs each attempt's request with the provider's
	// own credentials just before it is sent (Bedrock's SigV4, Vertex
	// AI's bearer token). A signing error fails the call before anything
	// is sent, with a *CredentialsError, never retried.
	Signer dialect.Signer

	hedges   hedges // the times to first byte and the hedges of the last minute (Policy.Hedge)
	once     sync.Once
	policy   Policy
	base     http.RoundTripper
	store    breaker.Store
	breakers sync.Map     // name → *breaker.Breaker, up to maxBreakers
	nbreaker atomic.Int64 // about how many breakers holds
	budget   *RetryBudget
	own      RetryBudget // the budget when RetryBudget is nil
}

// Target is a fallback: another provider or model that may answer a call
// the primary cannot.
type Target struct {
	// Provider names the target in breaker names and the attempt log.
	// If empty, the Transport's Provider.
	Provider string

	// Model replaces the model the request names, where the Dialect
	// names it: in the URL path for some (Gemini's
	// /v1beta/models/{model}:generateContent, Azure OpenAI's
	// /openai/deployments/{deployment}/…), the body sent as it came; else
	// the top-level "model" of its JSON body. If empty, the model is kept.
	Model string

	// Rewrite, if set, adapts the request to the target: its URL, its
	// host, its key. It gets a copy of the request whose Header and URL it
	// may change.
	Rewrite func(*http.Request)

	// RetryBudget caps the retries of the calls to the target's provider:
	// a call that falls back to it moves its count there. If nil, the
	// Transport's budget.
	RetryBudget *RetryBudget

	// Signer, if set, signs the requests to the target instead of the
	// Transport's Signer.
	Signer dialect.Signer

	// Dialect, if set and not the call's, is the API the target speaks:
	// the request is translated for it (dialect/chat) and its answer back
	// into the call's dialect. The request goes to the target dialect's
	// chat endpoint for Model (OpenAI's /v1/chat/completions, Azure
	// OpenAI's /openai/v1/chat/completions, Anthropic's /v1/messages,
	// Gemini's /v1beta/models/{model}:generateContent or
	// :streamGenerateContent?alt=sse, Bedrock's /model/{model}/converse
	// or /converse-stream; Vertex AI's
	// /publishers/anthropic/models/{model}:rawPredict or
	// :streamRawPredict for a claude-… Model, its body Anthropic's without
	// "model" and with "anthropic_version", else
	// /publishers/google/models/{model}:generateContent or
	// :streamGenerateContent?alt=sse), set before Rewrite, which then
	// points it at the target's host and base path (for Vertex AI, the
	// project's location: /v1/projects/{project}/locations/{location}). A whole answer is translated
	// whole, a stream event by event as it is read, an error answer
	// judged as the target wrote it and handed over in the call's
	// dialect; the Meter counts and prices the target's answer as it
	// came, for Model. A request the target's dialect cannot express
	// (chat.ErrUnsupported) skips the target without a call, with one
	// log line (OutcomeSkipped). The answer carries Sluice-Translated:
	// from->to (openai->anthropic). Translated: OpenAI (and Azure
	// OpenAI), Anthropic and Gemini calls; to OpenAI, Azure OpenAI,
	// Anthropic, Gemini, Vertex AI and Bedrock targets. If nil, the
	// target speaks the call's dialect.
	Dialect dialect.Dialect

	// Models declares what the target's provider's models can take, as
	// Transport.Models does for the primary's: a request its Model (else
	// the request's) cannot take skips the target without a call. If nil,
	// the Transport's Models when Provider is empty, else none.
	Models []ModelLimits
}

// NewClient returns an *http.Client whose Transport applies p.
func NewClient(p Policy) *http.Client {
	return &http.Client{Transport: &Transport{Policy: p}}
}

func (t *Transport) init() {
	t.once.Do(func() {
		t.policy = t.Policy.WithDefaults()
		t.budget = t.RetryBudget
		if t.budget == nil {
			t.budget = &t.own
		}
		t.base = t.Base
		if t.base == nil {
			t.base = newBase(t.policy.Timeout.Connect)
		}
		t.store = t.Store
		if t.store == nil {
			t.store = breaker.NewMemory()
		}
	})
}

// newBase returns an http.Transport for LLM calls: bounded dials and
// handshakes, enough idle connections per host for a busy gateway.
func newBase(connect time.Duration) *http.Transport {
	d := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           d.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          512,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   connect,
		ExpectContinueTimeout: time.Second,
	}
}

// maxBreakers bounds the breakers a Transport keeps at hand: past it, it
// forgets them all and makes them again as calls name them. A Breaker
// holds nothing of its own (its record is in the Store), so one made again
// is the same breaker; the bound keeps a client that names ever new models
// under ScopeModel from growing the Transport without end.
const maxBreakers = 4096

// Breaker returns the breaker called name, as this Transport uses it.
func (t *Transport) Breaker(name string) *breaker.Breaker {
	t.init()
	if b, ok := t.breakers.Load(name); ok {
		return b.(*breaker.Breaker)
	}
	if t.nbreaker.Add(1) > maxBreakers {
		t.breakers.Clear()
		t.nbreaker.Store(1)
	}
	b, loaded := t.breakers.LoadOrStore(name, breaker.New(name, t.policy.Breaker, t.store))
	if loaded {
		t.nbreaker.Add(-1)
	}
	return b.(*breaker.Breaker)
}

// BreakerName returns the name of the breaker guarding calls to model:
// the provider, or the provider and model with ScopeModel. It gives the
// same answer before and after the Transport's first call.
func (t *Transport) BreakerName(provider, model string) string {
	t.init()
	return t.policy.BreakerName(provider, model)
}

// RoundTrip makes the call, retrying as the policy allows. It reads the
// request's body whole and closes it, reads its model and output limit in
// one pass, then goes on as Send. A body that JSON parsers would read
// differently is not sent: the error matches ErrAmbiguousBody.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	b := Body{Caller: callerOf(req.Context())}
	if req.Body != nil && req.Body != http.NoBody {
		buf, err := readBody(req)
		req.Body.Close()
		if err != nil {
			return nil, errors.Join(errors.New("sluice: reading request body"), err)
		}
		f, err := request.Scan(buf) // an invalid model is never stamped or logged raw
		if errors.Is(err, request.ErrAmbiguous) {
			return nil, err
		}
		b.Bytes, b.Model, b.MaxTokens = buf, f.Model, f.MaxTokens
	}
	return t.Send(req, b)
}

// Body is a request body handed to Transport.Send whole, with what the
// Transport reads from it, so that a caller that has already parsed the
// body (a gateway checking it) saves the Transport a copy and a scan.
type Body struct {
	// Bytes is the body, sent as it is without a copy: it must not change
	// until the call ends, when the response body returned has been read
	// to its end or closed, or Send returned an error. If nil, the request
	// has no body.
	Bytes []byte

	// Model is the body's top-level "model": it names the breaker under
	// ScopeModel, the attempt log's model and the Meter's. If empty, the
	// body names no model. A model the URL path names (Gemini's
	// /v1beta/models/{model}:generateContent, Azure OpenAI's
	// /openai/deployments/{deployment}/…) is used instead, when valid.
	Model string

	// MaxTokens is the first positive of the body's max_tokens,
	// max_completion_tokens and max_output_tokens, which the Meter
	// reserves for. If zero, the body names none.
	MaxTokens int64

	// Caller is who makes the call: Caller.ID names it for the budgets
	// and rate limits scoped per caller and in a kept answer's identity
	// (if empty, the Meter and the Limiter see the anonymous caller, and
	// a kept answer is named by the credentials the request carries);
	// Caller.Priority ranks it where it waits for a slot (if empty, the
	// policy's).
	Caller Caller
}

// Send makes the call req describes with body b, retrying as the policy
// allows, as RoundTrip does. req.Body is ignored: neither read nor
// closed. The Transport trusts b's Model and MaxTokens and does not parse
// b.Bytes for them; a fallback Target's Model is still written into a copy
// of the body. Like RoundTrip, Send does not change req.
//
// A panic in a hook (Observe, the Tracer, Base, a Target's Rewrite, the
// Limiter, the Meter or the Keys) gives back all that the call holds — its
// rate-limit slot, its money, its breaker permit, its place in the retry
// budget, its span and its timer — and then goes on to the caller.
func (t *Transport) Send(req *http.Request, b Body) (*http.Response, error) {
	t.init()
	c := t.newCall(req, b)
	returned := false
	defer func() {
		if !returned { // a panic on its way to the caller
			c.abandon()
		}
	}()
	if t.Answers != nil {
		if keys := req.Header["Idempotency-Key"]; len(keys) > 0 {
			if resp, err, done := c.remember(keys[0]); done {
				c.end()
				returned = true
				return resp, err
			}
		}
	}
	resp, err := c.send(req, b) // a call that ends without an answer to keep clears its mark as it ends
	returned = true
	return resp, err
}

// send admits the call under the Limiter and the Meter, then runs it.
func (c *call) send(req *http.Request, b Body) (*http.Response, error) {
	t := c.t
	if t.Limiter != nil && (c.xs == nil || c.xs.skip == nil) { // the wait comes before the money is held; a primary skipped takes no slot (run's first attempt takes one)
		if err := c.admit(); err != nil {
			c.end()
			return nil, err
		}
	}
	if t.Meter != nil {
		if err := c.reserve(); err != nil {
			c.end()
			c.logMeterRefusal(err)
			return nil, err
		}
	}
	if c.hedgeable() {
		return c.hedged(req, b)
	}
	return c.run(1)
}

// readBody returns a request's body whole, read in one allocation when
// its length is known.
func readBody(req *http.Request) ([]byte, error) {
	if n := req.ContentLength; n > 0 && n <= 64<<20 {
		b := make([]byte, n)
		if _, err := io.ReadFull(req.Body, b); err != nil {
			return nil, err
		}
		return b, nil
	}
	return io.ReadAll(req.Body)
}

// run is the attempt loop, from the attempt whose log line is line. Each
// turn asks the current target's breaker, makes one attempt and hands a
// good answer over; after a failure, next says whether the target is
// tried again after a wait, the call moves on to the next target, or it
// ends with its last failure. A resumed stream (resume.go) runs it again
// for its continuation.
func (c *call) run(line int) (*http.Response, error) {
	for ; ; line++ {
		if c.xs != nil && c.xs.skip != nil { // the target cannot take the request: no call
			if c.skip(line) {
				continue
			}
			return c.give()
		}
		if c.t.Limiter != nil && line > 1 {
			if err := c.admit(); err != nil {
				if c.last == nil && c.lastErr == nil {
					c.lastErr = err
				}
				return c.give()
			}
		}
		if c.t.Keys != nil {
			if err := c.takeKey(); err != nil {
				if c.sent == 0 && c.last == nil && c.lastErr == nil {
					c.end() // refused before any attempt: its own error
					return nil, err
				}
				return c.give()
			}
		}
		permit, err := c.brk.Allow()
		if err != nil {
			if c.refused(line, err) {
				continue // on to the next target
			}
			return c.give()
		}
		rs := c.resuming()
		if rs != nil {
			rs.prepare() // the continuation's request, for this target
		}
		a := c.newAttempt(line, permit)
		resp, v, err := c.try(a)
		if resp != nil && v.class == "" && !v.retryable {
			return resp, nil // handed to the caller
		}
		if rs != nil && rs.refusedPrefix(a, resp) {
			continue // the same target again, without the prefix
		}
		c.keep(resp, err)
		switch s, wait := c.next(a, v); s {
		case stepFallBack:
			c.aim(c.target + 1)
		case stepRetry:
			if !c.backOff(wait) {
				return c.give()
			}
		default:
			return c.give()
		}
	}
}

// CloseIdleConnections closes the idle connections of Base, when Base
// has such a method.
func (t *Transport) CloseIdleConnections() {
	t.init()
	if ci, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
