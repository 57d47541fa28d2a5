package sluice

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/request"
)

// The sentinel errors of a call, matched with errors.Is.
var (
	// ErrCircuitOpen: the provider's breaker is open; the call was not sent.
	// The error is an *OpenError carrying when the breaker may close.
	ErrCircuitOpen = breaker.ErrOpen

	// ErrTimeout: a phase of the call ran out of time. The error is a
	// *TimeoutError naming the phase.
	ErrTimeout = errors.New("sluice: timeout")

	// ErrAttemptsExhausted: every attempt failed without a response; the
	// error is an *ExhaustedError wrapping the last attempt's error.
	ErrAttemptsExhausted = errors.New("sluice: attempts exhausted")

	// ErrStreamCut: the response body ended early, cut by the provider or
	// the network, after part of it reached the caller.
	ErrStreamCut = errors.New("sluice: response cut")

	// ErrAmbiguousBody: the request body names its model, its stream or
	// an output limit twice, or in another case ("Model"), so that JSON
	// parsers disagree on what it asks; the call was not sent. The
	// provider might serve one copy while the call is priced, limited
	// and routed by the other.
	ErrAmbiguousBody = request.ErrAmbiguous
)

// OpenError is the error of a call refused by an open breaker, matched with
// errors.As. Its Name is the breaker's, its State Open (or HalfOpen while
// another caller holds the probe), and its Until when the breaker may let a
// probe through: the time a queue worker can requeue the call for.
type OpenError = breaker.OpenError

// Phase names the part of a call that a timeout bounds.
type Phase string

// The phases of a call.
const (
	PhaseConnect   Phase = "connect"
	PhaseFirstByte Phase = "first_byte"
	PhaseIdle      Phase = "idle"
	PhaseTotal     Phase = "total"
)

// TimeoutError is the error of a call whose phase ran out of time.
type TimeoutError struct {
	Phase Phase
	Limit time.Duration
}

// Error names the phase and its limit.
func (e *TimeoutError) Error() string {
	return fmt.Sprintf("sluice: timeout: %s exceeded %s", e.Phase, e.Limit)
}

// Is reports whether target is ErrTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// Timeout reports true, as net.Error does.
func (e *TimeoutError) Timeout() bool { return true }

// ExhaustedError is the error of a call whose every attempt failed without
// a response.
type ExhaustedError struct {
	Attempts int
	Last     error
}

// Error names the attempt count and the last error.
func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("sluice: %d attempts failed, last: %v", e.Attempts, e.Last)
}

// Is reports whether target is ErrAttemptsExhausted.
func (e *ExhaustedError) Is(target error) bool { return target == ErrAttemptsExhausted }

// Unwrap returns the last attempt's error.
func (e *ExhaustedError) Unwrap() error { return e.Last }

// cutError is a body read error after bytes reached the caller.
type cutError struct {
	bytes int64
	err   error
}

func (e *cutError) Error() string {
	return fmt.Sprintf("sluice: response cut after %d bytes: %v", e.bytes, e.err)
}

func (e *cutError) Is(target error) bool { return target == ErrStreamCut }
func (e *cutError) Unwrap() error        { return e.err }

// CredentialsError is the error of a call whose request could not be
// signed with the provider's credentials (Transport.Signer): none could
// be had, or the token endpoint failed. Nothing was sent; it is not
// retried.
type CredentialsError struct {
	Provider string
	Err      error
}

func (e *CredentialsError) Error() string {
	return "sluice: " + e.Provider + ": no credentials to sign the request with: " + e.Err.Error()
}

func (e *CredentialsError) Unwrap() error { return e.Err }
