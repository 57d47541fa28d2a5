package sluice

import (
	"context"
	"net/http"
)

// Tracer traces a call's upstream attempts, one span each, within the
// trace the call's context carries. The engine knows tracing only through
// this seam, in standard types, so that the library depends on no tracing
// SDK; the gateway's is internal/tracing (OpenTelemetry).
type Tracer interface {
	// StartAttempt is called as an attempt is about to be sent, with ctx
	// the call's context, h a copy of the headers the attempt sends, in
	// which it may put the attempt's trace context (W3C traceparent), and
	// a the attempt's log line so far (its number, request id, provider,
	// model, breaker state, time queued). It must not keep a. It returns
	// the context the attempt's request carries, derived from ctx, and
	// end, which the Transport calls once with the attempt's finished log
	// line (its outcome, status, wait before the retry, cost); end must
	// not keep the pointer either.
	StartAttempt(ctx context.Context, h http.Header, a *Attempt) (context.Context, func(*Attempt))
}

// startTrace starts the trace of attempt a, when the Transport has a
// Tracer: r gets a copy of its headers, carrying the trace context, and
// the attempt's traced context.
func (c *call) startTrace(a *attempt, r *http.Request) *http.Request {
	h := r.Header.Clone()
	if h == nil {
		h = http.Header{}
	}
	ctx, end := c.t.Tracer.StartAttempt(r.Context(), h, &a.rec)
	r = r.WithContext(ctx)
	r.Header, a.traceEnd = h, end
	return r
}
