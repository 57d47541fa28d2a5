// Package hook holds what the engine tells its hooks about a call: who
// makes it (Caller), what one of its attempts asks to be let through
// (Ask: the Limiter's slot, a key of the pool, the Meter's hold) and what
// an answer taught (Answer: a pause, a learned pace, a key out of quota).
//
// The root package's Limiter, Keys and Meter interfaces take these values,
// and limit, spend and the gateway's key pools implement them, so both
// sides import this package and neither imports the other. It imports only
// the standard library and dialect.
package hook

import (
	"fmt"
	"net/http"
	"time"

	"github.com/sluice-llm/sluice/dialect"
)

// Priority is how a call ranks where calls wait for a rate-limit or
// concurrency slot: a waiting Interactive call is admitted before any
// waiting Batch call.
type Priority string

const (
	// Interactive is the priority of a call someone is waiting for.
	Interactive Priority = "interactive"

	// Batch is the priority of a call that can wait: it yields to every
	// waiting Interactive call, and may not take the share of a limit kept
	// for them.
	Batch Priority = "batch"
)

// ParsePriority returns the priority s names, or an error saying which
// names there are.
func ParsePriority(s string) (Priority, error) {
	if p := Priority(s); p == Interactive || p == Batch {
		return p, nil
	}
	return "", fmt.Errorf("priority %q: use interactive or batch", s)
}

// Caller is who makes a call.
type Caller struct {
	// ID names the caller for what is scoped per caller: per-key budgets
	// and rate limits, and a kept answer's identity. Use an identity, not
	// a secret (the gateway passes the auth.keys entry that matched, or a
	// hash of the credentials the request carried). "" is the anonymous
	// caller.
	ID string

	// Priority is the call's; if empty, its policy's.
	Priority Priority
}

// Ask is one call, or one of its attempts, as a hook is asked to let it
// through.
type Ask struct {
	// Caller is who makes the call, with its priority resolved: never
	// empty.
	Caller Caller

	// Provider and Model are the attempt's target.
	Provider string
	Model    string

	// Models are the models the call may reach, the primary's first: the
	// Meter holds money for the dearest. Only Meter.Reserve is given them.
	Models []string

	// BodyBytes is the request body's length, MaxTokens the first positive
	// of its max-token keys (0 when it names none): what the call may use.
	BodyBytes int
	MaxTokens int64

	// MaxWait is how long the attempt may wait for its turn (the
	// Limiter's slot, a key of the pool); 0 means it may not wait.
	MaxWait time.Duration

	// Total bounds the whole call: what a hold taken for it must outlive.
	Total time.Duration
}

// Answer is what one attempt's answer said, for a hook to learn from: a
// 429's pause, a pace, a key out of quota.
type Answer struct {
	// Dialect reads the answer's headers and error body.
	Dialect dialect.Dialect

	// Provider and Model are the attempt's target; Key is the id of the
	// pool's key it used ("" when none).
	Provider string
	Model    string
	Key      string

	// Sent is when the attempt was sent.
	Sent time.Time

	// Status is the answer's HTTP status; Header its headers.
	Status int
	Header http.Header

	// Quota says the answer was a quota-exhausted 429: no retry helps.
	Quota bool

	// RetryAfter is the pause a 429 asked for (Retry-After and its
	// kin), 0 when none.
	RetryAfter time.Duration
}
