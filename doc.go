// Package sluice makes calls to LLM APIs (OpenAI-compatible, Anthropic,
// Gemini)
// resilient: when the provider hangs, rate-limits or goes down, callers get
// a bounded, honest answer fast instead of hanging, and they do not make the
// outage worse by retrying in a tight loop.
//
// Transport is an http.RoundTripper; NewClient wraps it in an *http.Client.
// A caller that holds a request's body whole (a server relaying it) hands
// it to Transport.Send as a Body instead, used in place without a copy.
// Inside one RoundTrip, every attempt goes through these steps in order:
//
//  1. the Limiter's wait, when there is a Limiter: the attempt waits for
//     its slot under the rate limits (for the first attempt, before the
//     Meter's reservation: the wait comes before the money is held);
//  2. a key of the Keys, when there are Keys (see below);
//  3. the circuit breaker (package breaker): an open breaker refuses the
//     attempt at once with an *OpenError; the call moves on to the next
//     fallback, or ends;
//  4. the attempt on Base, under the connect and first-byte timeouts; a
//     stream is held until its first event, so that a stall, a cut or a
//     provider error event before it is retried like any failed attempt;
//  5. the verdict: retryable statuses (408, 429, 500, 502, 503, 504, 529)
//     and connection errors may be retried; a quota-exhausted 429, other
//     4xx and anything after the first body byte reached the caller are
//     not. The Limiter (or the Keys) learns from every answer;
//  6. after a failure, the next step: a retry of the same target takes a
//     token of the retry budget (at most Retry.Budget of the attempts in
//     flight may be retries, counted in a RetryBudget that Transports
//     calling one provider may share) and waits full-jitter backoff or the
//     provider's Retry-After; a failure the target will not get past moves
//     on to the next fallback at once. The attempt's log line is written
//     once this is decided.
//
// With Answers, a request that carries an Idempotency-Key is looked up
// before all of this: a kept answer is replayed with no attempt.
//
// With a Keys (the gateway's pools of provider keys), each attempt is given
// one key of the current target's provider after the Limiter's wait and
// before the breaker, and its line names the key by short hash; a 429,
// rate limit or quota, is then retried at once on another ready key, with
// no backoff and no retry-budget token.
//
// Before the first attempt, after the Limiter's first wait, a Meter
// (package spend has one) may reserve the call's worst-case cost or
// refuse the call; each answered attempt is priced through it, and the
// reservation settled when the call ends.
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
