// Package gateway is the HTTP server of `sluice serve`: a reverse proxy
// that agents in any language point their SDK's base URL at, so that they
// share one set of timeouts, retries, breakers and one attempt log.
//
// A request under a route's prefix is forwarded, prefix stripped, to the
// route's provider through a sluice.Transport; only configured base URLs
// are ever dialled. Streams are held until their first event (so a failure
// before it is retried unseen), then relayed chunk by chunk and flushed at
// once; a stream that stalls or is cut after that ends with an error event
// in the provider's own shape, never with a made-up ending. Every answer
// carries Sluice-Request-Id, Sluice-Attempts and x-should-retry: false, so that
// SDK retries do not multiply the gateway's.
//
// Each provider speaks one dialect (package dialect), which the gateway
// asks and never names: where the client's key is and where the
// provider's goes, the shape of the gateway's own errors and of a
// stream's error event, whether a stream may ask for its usage. A
// provider whose dialect signs (dialect.Traits.Signs) has its Signer built
// once from its region and credentials (dialect/awssign for Bedrock,
// dialect/googleauth for Vertex AI); the client's credentials never reach
// it, and credentials that cannot be had answer 502 upstream_credentials
// with no upstream call.
//
// The call's model (breaker names, the log's model, budgets, rate limits,
// fallbacks) is the one the path names where the provider's dialect puts
// it there (Gemini's /v1beta/models/{model}:…, Azure OpenAI's
// /openai/deployments/{deployment}/…), else the body's "model": the
// dialect reads it, and the engine puts a fallback's model back where it
// was. A model named in the path is checked as a body's is (at most 256
// bytes of printable UTF-8, and no control character anywhere in the
// path), else 400 invalid_request before any upstream call.
//
// Operator events — a breaker's transitions (told by the breakers' hook;
// those of other processes sharing the state read by a refresh), the
// first refusals after a quiet period, a budget exhausted, a state store
// failing, a pool key paused — are one structured line each on
// Options.Logger, which `sluice serve` sends to stderr, at most one per
// kind and subject every 10 s (package events).
package gateway
