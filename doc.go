// Package sluice makes calls to LLM APIs (OpenAI-compatible, Anthropic,
// Gemini)
// resilient: when the provider hangs, rate-limits or goes down, callers get
// a bounded, honest answer fast instead of hanging, and they do not make the
// outage worse by retrying in a tight loop.
//
// Transport is an http.RoundTripper; NewClient wraps it in an *http.Client.
// A caller that holds a request's body whole (a server relaying it) hands
// it to Transport.Send as a Body instead, used in place without a copy.
// Inside one RoundTrip, every attempt goes through these layers in order:
//
//  1. the retry budget (only for retries): at most Retry.Budget of the calls
//     in flight may be retrying, counted in a RetryBudget that Transports
//     calling one provider may share;
//  2. the circuit breaker (package breaker): an open breaker fails the call
//     at once with an *OpenError, and the retry loop stops;
//  3. the attempt on Base, under the connect and first-byte timeouts; a
//     stream is held until its first event, so that a stall, a cut or a
//     provider error event before it is retried like any failed attempt;
//  4. the verdict: retryable statuses (408, 429, 500, 502, 503, 504, 529)
//     and connection errors are retried with full-jitter backoff or the
//     provider's Retry-After; a quota-exhausted 429, other 4xx and anything
//     after the first body byte reached the caller are not.
//
// With a Keys (the gateway's pools of provider keys), each attempt is given
// one key of the current target's provider after the Limiter's wait and
// before the breaker, and its line names the key by short hash; a 429,
// rate limit or quota, is then retried at once on another ready key, with
// no backoff and no retry-budget token.
//
// Before the first attempt, a Meter (package spend has one) may reserve the
// call's worst-case cost or refuse the call; each answered attempt is
// priced through it, and the reservation settled when the call ends.
//
// With a Tracer (the gateway's is OpenTelemetry), each attempt is a span
// under the trace of the call's context, and its request carries the
// span's trace context (W3C traceparent) upstream; the library itself
// depends on no tracing SDK.
//
// The whole call, backoffs and body included, is bounded by
// Timeout.Total. Each attempt leaves one JSON line in the AttemptLog. See
// ExampleNewClient.
package sluice
