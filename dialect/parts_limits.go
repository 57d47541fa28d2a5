package dialect

import (
	"net/http"
	"time"
)

// Rate-limit windows, as each dialect's headers report them. (To be
// folded into the dialect files.)

// --- OpenAI ---

// openAIWindows are OpenAI's rate-limit headers: a window of requests and
// one of tokens, each with what is left (x-ratelimit-remaining-*), when it
// is full again (x-ratelimit-reset-*: a Go duration, "6m0s", "250ms") and
// its size (x-ratelimit-limit-*).
var openAIWindows = []headerWindow{
	{true, "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests", "X-Ratelimit-Limit-Requests"},
	{false, "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens", "X-Ratelimit-Limit-Tokens"},
}

// Windows reads OpenAI's x-ratelimit- headers. A reset in bare seconds is
// read too, as some OpenAI-compatible servers send it.
func (openAI) Windows(h http.Header, now time.Time, fn func(Window)) {
	readWindows(h, now, openAIWindows, durationReset, fn)
}

// --- Azure OpenAI ---

// Windows reads Azure OpenAI's headers: OpenAI's x-ratelimit- headers,
// the reset in bare seconds ("6", "0.5") or as a Go duration, and -1 for a
// window it does not count (Left -1, Size 0).
func (azure) Windows(h http.Header, now time.Time, fn func(Window)) {
	readWindows(h, now, openAIWindows, durationReset, fn)
}

// --- Anthropic ---

// anthropicWindows are Anthropic's rate-limit headers: requests, tokens,
// input tokens and output tokens, each with what is left
// (anthropic-ratelimit-*-remaining), when it is full again (-reset: an
// RFC 3339 time) and its size (-limit).
var anthropicWindows = []headerWindow{
	{true, "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset", "Anthropic-Ratelimit-Requests-Limit"},
	{false, "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset", "Anthropic-Ratelimit-Tokens-Limit"},
	{false, "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset", "Anthropic-Ratelimit-Input-Tokens-Limit"},
	{false, "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset", "Anthropic-Ratelimit-Output-Tokens-Limit"},
}

// Windows reads Anthropic's anthropic-ratelimit- headers, the reset an
// RFC 3339 time.
func (anthropic) Windows(h http.Header, now time.Time, fn func(Window)) {
	readWindows(h, now, anthropicWindows, timeReset, fn)
}

// --- Gemini ---

// Windows reports nothing: Gemini sends no rate-limit headers, only a
// 429's retry delay (Judge).
func (gemini) Windows(h http.Header, now time.Time, fn func(Window)) {}
