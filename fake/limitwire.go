package fake

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// This file holds the rate limits' wire shape in each dialect: the
// headers every answer carries while a limit is set, and the 429 of a
// refused call. The Responses API has OpenAI's, by embedding.

// limitHeaders sets OpenAI's x-ratelimit-limit-, -remaining- and -reset-
// headers for each limit that is set; reset is a duration in OpenAI's
// format ("1s", "6m0s", "250ms").
func (openAI) limitHeaders(h http.Header, q quota) {
	reset := openAIDuration(q.resetAt.Sub(q.now))
	if q.requestLimit > 0 {
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(q.requestLimit))
		h.Set("x-ratelimit-remaining-requests", strconv.Itoa(q.remainingRequests()))
		h.Set("x-ratelimit-reset-requests", reset)
	}
	if q.tokenLimit > 0 {
		h.Set("x-ratelimit-limit-tokens", strconv.Itoa(q.tokenLimit))
		h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(q.remainingTokens()))
		h.Set("x-ratelimit-reset-tokens", reset)
	}
}

// openAIDuration writes d the way OpenAI's reset headers do, rounded up
// to the millisecond: Go's Duration format.
func openAIDuration(d time.Duration) string {
	return max(0, d+time.Millisecond-1).Truncate(time.Millisecond).String()
}

func (openAI) limitError(q quota, _ string) []byte {
	e := apiError{Type: q.over, Code: ptr("rate_limit_exceeded")}
	switch {
	case q.over == "requests":
		e.Message = fmt.Sprintf("Rate limit reached for requests per min (RPM): Limit %d, Used %d, Requested 1. "+
			"Please try again in %s.", q.requestLimit, q.requests, openAIDuration(q.wait))
	case q.tooLarge:
		e.Message = fmt.Sprintf("Request too large for tokens per min (TPM): Limit %d, Requested %d. "+
			"The input or output tokens must be reduced in order to run successfully.", q.tokenLimit, q.want)
	default:
		e.Message = fmt.Sprintf("Rate limit reached for tokens per min (TPM): Limit %d, Used %d, Requested %d. "+
			"Please try again in %s.", q.tokenLimit, q.tokens, q.want, openAIDuration(q.wait))
	}
	return marshal(map[string]any{"error": e})
}

// limitHeaders sets Anthropic's anthropic-ratelimit-requests- and
// -tokens- limit, remaining and reset headers for each limit that is set;
// reset is an RFC 3339 time in UTC, rounded up to the second.
func (anthropic) limitHeaders(h http.Header, q quota) {
	reset := q.resetAt.Add(time.Second - 1).Truncate(time.Second).UTC().Format(time.RFC3339)
	if q.requestLimit > 0 {
		h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(q.requestLimit))
		h.Set("anthropic-ratelimit-requests-remaining", strconv.Itoa(q.remainingRequests()))
		h.Set("anthropic-ratelimit-requests-reset", reset)
	}
	if q.tokenLimit > 0 {
		h.Set("anthropic-ratelimit-tokens-limit", strconv.Itoa(q.tokenLimit))
		h.Set("anthropic-ratelimit-tokens-remaining", strconv.Itoa(q.remainingTokens()))
		h.Set("anthropic-ratelimit-tokens-reset", reset)
	}
}

func (anthropic) limitError(q quota, requestID string) []byte {
	var msg string
	switch {
	case q.over == "requests":
		msg = fmt.Sprintf("This request would exceed the rate limit for your organization of %d requests per minute. "+
			"Please try again in %d seconds.", q.requestLimit, q.retryAfter())
	case q.tooLarge:
		msg = fmt.Sprintf("This request would exceed the rate limit for your organization of %d tokens per minute "+
			"on its own: it needs %d tokens.", q.tokenLimit, q.want)
	default:
		msg = fmt.Sprintf("This request would exceed the rate limit for your organization of %d tokens per minute. "+
			"Please try again in %d seconds.", q.tokenLimit, q.retryAfter())
	}
	return marshal(newAnthropicErr("rate_limit_error", msg, requestID))
}
