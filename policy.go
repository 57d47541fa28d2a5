package sluice

import (
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

// Policy says how one call is timed, retried and guarded. The zero value is
// usable: every zero field takes the default of the interactive policy,
// written in each field's doc.
type Policy struct {
	// Name names the policy in the attempt log. If empty, "interactive".
	Name string

	// Timeout bounds each phase of a call.
	Timeout Timeouts

	// Retry says which attempts are tried again and how long to wait.
	Retry Retry

	// Breaker says when the circuit breaker opens and for how long.
	Breaker breaker.Settings

	// BreakerScope says what one breaker guards. If empty, ScopeProvider.
	BreakerScope Scope

	// MaxQueue bounds how long a call waits for a rate-limit slot before
	// each attempt (see Transport.Limiter). If zero or longer, it is what is
	// left of Timeout.Total minus one Timeout.FirstByte, so that a call
	// admitted late still has time for its answer to begin.
	MaxQueue time.Duration

	// Priority is the priority of the policy's calls where they wait for
	// a rate-limit slot (see Priority); a context's (WithPriority) comes
	// first. If empty, PriorityInteractive; Nightly's is PriorityBatch.
	Priority Priority

	// Resume, if true, continues a stream that breaks after its answer
	// began — cut, stalled past Timeout.Idle, or ended by the provider's
	// error event — on the next target (the same one while its attempts
	// last, else the next fallback), within the one Timeout.Total: the
	// text the caller already has goes as the assistant's prefix where
	// the target's API takes one (Anthropic, Bedrock), and the caller
	// gets only what follows it; where the target refuses the prefix
	// (400) or takes none (OpenAI, Gemini), the call starts again and the
	// new text is relayed from where the sent text ends, if it begins
	// with that text byte for byte, else the stream ends with the
	// dialect's error event. Never for a stream that carried a tool call
	// or answers a request for structured output. The caller's stream is
	// then written event by event by its dialect's codec (dialect/chat),
	// one stream across attempts, its usage the sum of theirs; the broken
	// attempt's log line says OutcomeResumed. Calls in OpenAI, Azure
	// OpenAI, Anthropic and Gemini are resumed. If false (the default),
	// a stream that breaks ends with the error, never sent again, so that
	// no text reaches the caller twice.
	Resume bool

	// ResumeMax caps the resumes of one call. If zero, 1.
	ResumeMax int

	// Hedge says when a call that has not begun to answer is raced by a
	// second attempt (see Hedge). The zero value hedges nothing.
	Hedge Hedge
}

// Scope says what one circuit breaker guards.
type Scope string

const (
	// ScopeProvider gives one breaker per provider.
	ScopeProvider Scope = "provider"
	// ScopeModel gives one breaker per provider and model, so that one
	// model's outage does not block calls to another model of the same
	// provider (a fallback, say).
	ScopeModel Scope = "model"
)

// Timeouts bounds each phase of a call. No phase ever waits forever: a zero
// field takes the default written in its doc.
type Timeouts struct {
	// Connect bounds the TCP and TLS handshakes of one attempt. It applies
	// to the Transport's own Base (when Base is nil). If zero, 5s.
	Connect time.Duration

	// FirstByte bounds the wait from the request written to the response
	// headers, and for a stream to the first byte of its first event: SSE
	// comments before it (keep-alives while a model is queued) do not
	// count. If zero, 20s.
	FirstByte time.Duration

	// Idle bounds the silence between two body chunks of a response.
	// If zero, 15s.
	Idle time.Duration

	// Total bounds the whole call: every attempt, every backoff sleep and
	// the reading of the response body. Nothing outlives it. If zero, 30s.
	Total time.Duration
}

// Retry says which attempts are tried again and how long to wait between
// them. The zero value is usable.
type Retry struct {
	// MaxAttempts caps the tries of one call, the first one included.
	// If zero, 3. Set 1 to never retry.
	MaxAttempts int

	// Base and Cap shape the full-jitter backoff: before retry n (n = 1 for
	// the first retry) the wait is uniform in [0, min(Cap, Base·2^(n-1))).
	// If zero, 400ms and 16s.
	Base, Cap time.Duration

	// MaxRetryAfter is the longest server-requested wait (Retry-After,
	// retry-after-ms) that is honoured; a longer one ends the call now with
	// the provider's response. If zero, 20s.
	MaxRetryAfter time.Duration

	// Statuses are the HTTP statuses that may be retried.
	// If nil, 408, 429, 500, 502, 503, 504 and 529.
	Statuses []int

	// QuotaMarkers are strings that, found in a 429 response body, mean the
	// account's quota or credit is used up: waiting will not help, so the
	// call is not retried and the breaker does not count it.
	// If nil, insufficient_quota and billing_hard_limit_reached.
	QuotaMarkers []string

	// FallbackMarkers are strings that, found in a 4xx response body, mean
	// the request is too much for this model but may suit another (a
	// prompt longer than its context window): the call moves on to the
	// Transport's next fallback, if any. If nil, context_length_exceeded
	// and "prompt is too long".
	FallbackMarkers []string

	// Budget caps retries across calls: at most this fraction of the calls
	// in flight under one RetryBudget (a Transport's own, or the one its
	// provider's Transports share) may be retries (never fewer than 3).
	// If zero, 0.2. A negative value turns the budget off.
	Budget float64
}

// DefaultStatuses are the statuses retried when Retry.Statuses is nil.
var defaultStatuses = []int{408, 429, 500, 502, 503, 504, 529}

var defaultQuotaMarkers = []string{"insufficient_quota", "billing_hard_limit_reached"}

var defaultFallbackMarkers = []string{"context_length_exceeded", "prompt is too long"}

// Interactive returns the policy for a caller that a person waits on: short
// timeouts, three attempts. It is what the zero Policy means.
func Interactive() Policy {
	return Policy{
		Name: "interactive",
		Timeout: Timeouts{
			Connect: 5 * time.Second, FirstByte: 20 * time.Second,
			Idle: 15 * time.Second, Total: 30 * time.Second,
		},
		Retry: Retry{
			MaxAttempts: 3, Base: 400 * time.Millisecond, Cap: 16 * time.Second,
			MaxRetryAfter:   20 * time.Second,
			Statuses:        append([]int(nil), defaultStatuses...),
			QuotaMarkers:    append([]string(nil), defaultQuotaMarkers...),
			FallbackMarkers: append([]string(nil), defaultFallbackMarkers...),
			Budget:          0.2,
		},
		Breaker: breaker.Settings{
			Failures: 5, Cool: 30 * time.Second, Lease: 30 * time.Second,
			Slow: breaker.Slow{Threshold: 15 * time.Second, Count: 3, Window: 60 * time.Second},
		},
		BreakerScope: ScopeProvider,
	}
}

// Nightly returns the policy for batch work that nobody waits on: long
// timeouts, five attempts, patient backoff.
func Nightly() Policy {
	p := Interactive()
	p.Name = "nightly"
	p.Timeout = Timeouts{
		Connect: 10 * time.Second, FirstByte: 120 * time.Second,
		Idle: 30 * time.Second, Total: 600 * time.Second,
	}
	p.Retry.MaxAttempts = 5
	p.Retry.Base = time.Second
	p.Retry.Cap = 60 * time.Second
	p.Retry.MaxRetryAfter = 120 * time.Second
	p.Breaker.Cool = 60 * time.Second
	p.Breaker.Lease = p.Timeout.Total
	p.Breaker.Slow.Threshold = 0
	p.Priority = PriorityBatch
	return p
}

// WithDefaults returns p with every zero field set as its doc says: the
// policy a Transport actually applies.
func (p Policy) WithDefaults() Policy {
	d := Interactive()
	if p.Name == "" {
		p.Name = d.Name
	}
	setDur(&p.Timeout.Connect, d.Timeout.Connect)
	setDur(&p.Timeout.FirstByte, d.Timeout.FirstByte)
	setDur(&p.Timeout.Idle, d.Timeout.Idle)
	setDur(&p.Timeout.Total, d.Timeout.Total)
	if p.Retry.MaxAttempts <= 0 {
		p.Retry.MaxAttempts = d.Retry.MaxAttempts
	}
	setDur(&p.Retry.Base, d.Retry.Base)
	setDur(&p.Retry.Cap, d.Retry.Cap)
	setDur(&p.Retry.MaxRetryAfter, d.Retry.MaxRetryAfter)
	if p.Retry.Statuses == nil {
		p.Retry.Statuses = d.Retry.Statuses
	}
	if p.Retry.QuotaMarkers == nil {
		p.Retry.QuotaMarkers = d.Retry.QuotaMarkers
	}
	if p.Retry.FallbackMarkers == nil {
		p.Retry.FallbackMarkers = d.Retry.FallbackMarkers
	}
	if p.Retry.Budget == 0 {
		p.Retry.Budget = d.Retry.Budget
	}
	if p.Breaker.Lease <= 0 {
		p.Breaker.Lease = p.Timeout.Total
	}
	if p.BreakerScope == "" {
		p.BreakerScope = ScopeProvider
	}
	if p.Priority == "" {
		p.Priority = PriorityInteractive
	}
	if p.ResumeMax <= 0 {
		p.ResumeMax = 1
	}
	return p
}

func setDur(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// BreakerName returns the name of the breaker that guards calls to model
// of provider under p: the provider, or with ScopeModel the provider and
// model ("openai/gpt-4o").
func (p Policy) BreakerName(provider, model string) string {
	if p.BreakerScope == ScopeModel && model != "" {
		return provider + "/" + model
	}
	return provider
}
