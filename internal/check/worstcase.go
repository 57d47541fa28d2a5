package check

import (
	"math"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
)

// worstCase returns the longest a call under p can spend on its attempts
// and the waits between them — the time by which it has failed for good
// or its answer has started — bounded by the total timeout:
//
//	min(total, N·(connect + first_byte) + Σ_{n=1}^{N-1} max(min(cap, base·2^(n-1)), 1.1·max_retry_after))
//
// N is max_attempts. An attempt that fails does so within connect +
// first_byte: an error status, a reset or a stall all come before the
// first byte of an answer, and nothing is retried after it. Before retry n
// the wait is at most the larger of the backoff ceiling min(cap,
// base·2^(n-1)) and the longest Retry-After honoured, max_retry_after plus
// its jitter of at most 10 %. The upload of the request body is not
// counted. The answer itself (a stream, say) may then run on, but never
// past total: total is the hard bound of every call. Zero fields of p take
// the interactive defaults, as in sluice.Policy.
//
// For the interactive policy: 3·(5s + 20s) + 2·22s = 119s, bounded by
// total: 30s. For nightly: 5·(10s + 120s) + 4·132s = 1178s, bounded: 600s.
func worstCase(p sluice.Policy) time.Duration {
	p = p.WithDefaults()
	return min(p.Timeout.Total, span(p))
}

// worstCaseUnbounded returns the sum that worstCase bounds by total: how
// long the attempts and waits of p would take if total did not cut them
// short. When it is larger than total, the last attempts of a failing call
// never happen.
func worstCaseUnbounded(p sluice.Policy) time.Duration {
	return span(p.WithDefaults())
}

// worstCaseRoute returns worstCase for a call on route r: the primary and
// then each fallback target, every one with all the attempts and waits of
// the route's policy, the whole call still bounded by the policy's total.
// A route whose policy c does not define is reckoned with the interactive
// defaults.
func worstCaseRoute(c *config.Config, r config.Route) time.Duration {
	p := c.Policies[r.Policy].WithDefaults()
	return min(p.Timeout.Total, mulSat(span(p), 1+len(r.Fallbacks)))
}

// span is the unbounded sum of one target's attempts and waits.
func span(p sluice.Policy) time.Duration {
	r := p.Retry
	try := addSat(p.Timeout.Connect, p.Timeout.FirstByte)
	hint := addSat(r.MaxRetryAfter, r.MaxRetryAfter/10)
	sum := try
	n := 1 // the retry about to be counted
	for ; n < r.MaxAttempts && n <= 64; n++ {
		sum = addSat(sum, addSat(max(backoff(r, n), hint), try))
	}
	// From retry 65 on, base·2^(n-1) is past any cap: every wait is equal.
	if rest := r.MaxAttempts - n; rest > 0 {
		sum = addSat(sum, mulSat(addSat(max(r.Cap, hint), try), rest))
	}
	return sum
}

// backoff is the ceiling of the full-jitter wait before retry n:
// min(cap, base·2^(n-1)).
func backoff(r sluice.Retry, n int) time.Duration {
	shift := n - 1
	if shift >= 63 || r.Base > math.MaxInt64>>shift {
		return r.Cap
	}
	return min(r.Cap, r.Base<<shift)
}
