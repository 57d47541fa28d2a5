package fake

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// limitWindow is the span of the sliding window a Provider's rate limits
// count over.
const limitWindow = time.Minute

// window is the sliding window of a Provider's rate limits: the calls it
// admitted in the last minute, oldest first. A call admitted at t leaves
// the window at t+limitWindow.
type window struct {
	calls  []admitted
	tokens int // the tokens of calls, summed
}

// admitted is one call in the window.
type admitted struct {
	at     time.Time
	tokens int
}

// quota is a call's standing under the rate limits: whether it was
// admitted, and what the rate-limit headers tell the client.
type quota struct {
	requestLimit, tokenLimit int // the limits per minute; 0 is off
	admitted                 bool
	over                     string        // when refused: "requests" or "tokens", the limit that refused it
	tooLarge                 bool          // when refused: the call's tokens alone exceed the token limit
	wait                     time.Duration // when refused: until the window has room for the call
	requests, tokens         int           // used in the window, this call included when admitted
	want                     int           // the call's tokens
	now                      time.Time     // the time of the admission
	resetAt                  time.Time     // when the window is empty again: the newest call leaves it

	// With a token bucket: bucket is set, requestCap and tokenCap are what
	// each bucket holds when full (its burst, else its limit).
	bucket               bool
	requestCap, tokenCap float64
}

// admit decides whether a call of want tokens fits under requestLimit
// calls and tokenLimit tokens per minute (0 for no limit) at now, and
// counts it in the window if so. A refused call is not counted. When both
// limits refuse a call, over names the request limit and wait is the
// longer of the two.
func (w *window) admit(now time.Time, requestLimit, tokenLimit, want int) quota {
	w.prune(now)
	q := quota{requestLimit: requestLimit, tokenLimit: tokenLimit, want: want, now: now}
	if requestLimit > 0 && len(w.calls)+1 > requestLimit {
		// The call fits once the k oldest calls have left.
		k := len(w.calls) + 1 - requestLimit
		q.over, q.wait = "requests", w.calls[k-1].at.Add(limitWindow).Sub(now)
	}
	if tokenLimit > 0 && w.tokens+want > tokenLimit {
		wait := limitWindow
		if want > tokenLimit {
			q.tooLarge = true
		} else {
			left := w.tokens
			for _, c := range w.calls {
				left -= c.tokens
				if left+want <= tokenLimit {
					wait = c.at.Add(limitWindow).Sub(now)
					break
				}
			}
		}
		if q.over == "" {
			q.over = "tokens"
		}
		q.wait = max(q.wait, wait)
	}
	if q.over == "" {
		q.admitted = true
		w.calls = append(w.calls, admitted{at: now, tokens: want})
		w.tokens += want
	}
	q.requests, q.tokens, q.resetAt = len(w.calls), w.tokens, now
	if n := len(w.calls); n > 0 {
		q.resetAt = w.calls[n-1].at.Add(limitWindow)
	}
	return q
}

// prune drops the calls that have left the window at now.
func (w *window) prune(now time.Time) {
	i := 0
	for i < len(w.calls) && !w.calls[i].at.Add(limitWindow).After(now) {
		w.tokens -= w.calls[i].tokens
		i++
	}
	w.calls = w.calls[i:]
	if len(w.calls) == 0 {
		w.calls = nil // let a long-idle window's array go
	}
}

// retryAfter is the refused call's wait in whole seconds, rounded up, at
// least 1.
func (q quota) retryAfter() int {
	return max(1, int((q.wait+time.Second-1)/time.Second))
}

// remainingRequests and remainingTokens are what the limits leave in the
// window after the call.
func (q quota) remainingRequests() int { return max(0, q.requestLimit-q.requests) }
func (q quota) remainingTokens() int   { return max(0, q.tokenLimit-q.tokens) }

// overstated is the quota as LimitHeadersOverstate reports it: what each
// limit has left raised by half the limit, at most the limit. With a
// token bucket, resetAt is when the buckets would be full again if the
// remaining reported were true (the headers agree with each other, not
// with the bucket); over a sliding window it stays the true one.
func (q quota) overstated() quota {
	o := q
	rr := min(q.requestLimit, q.remainingRequests()+q.requestLimit/2)
	tr := min(q.tokenLimit, q.remainingTokens()+q.tokenLimit/2)
	o.requests, o.tokens = q.requestLimit-rr, q.tokenLimit-tr
	if q.bucket {
		o.resetAt = q.now
		if q.requestLimit > 0 {
			o.resetAt = later(o.resetAt, q.now.Add(refillTime(q.requestCap-float64(rr), q.requestLimit)))
		}
		if q.tokenLimit > 0 {
			o.resetAt = later(o.resetAt, q.now.Add(refillTime(q.tokenCap-float64(tr), q.tokenLimit)))
		}
	}
	return o
}

// requestFields are the members of a request body the fake reads.
type requestFields struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int `json:"max_tokens"`
	MaxCompletionTokens int `json:"max_completion_tokens"`
	MaxOutputTokens     int `json:"max_output_tokens"`
}

// readRequest reads the members the fake uses from a request body; a
// body that does not parse gets the defaults.
func readRequest(body []byte) requestFields {
	var in requestFields
	_ = json.Unmarshal(body, &in)
	return in
}

// maxOutput is the request's limit on output tokens: the first positive
// of max_tokens, max_completion_tokens and max_output_tokens, else 0.
func (in requestFields) maxOutput() int {
	for _, n := range []int{in.MaxTokens, in.MaxCompletionTokens, in.MaxOutputTokens} {
		if n > 0 {
			return n
		}
	}
	return 0
}

// answerEvents is the number of text events (completion tokens) of an
// answer to step, with events the Provider's default.
func answerEvents(step Step, events int) int {
	n := step.Events
	if n == 0 {
		n = events
	}
	if n <= 0 {
		n = 5
	}
	return max(n, step.After) // a stream always outlasts its stall or cut
}

// refuse answers a call the rate limits refused: a 429 in the dialect's
// shape with Retry-After. The rate-limit headers are already set.
func (c *call) refuse(q quota) {
	c.w.Header().Set("Retry-After", strconv.Itoa(q.retryAfter()))
	writeJSON(c.w, http.StatusTooManyRequests, c.d.limitError(q, c.id))
}
