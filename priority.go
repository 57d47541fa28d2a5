package sluice

import (
	"context"

	"github.com/sluice-llm/sluice/hook"
)

// Priority is a call's priority where it waits for a rate-limit or
// concurrency slot (Transport.Limiter): where slots are scarce, a waiting
// PriorityInteractive call is admitted before any waiting PriorityBatch
// call, across every process and host sharing the limiter's state; a
// Batch call that has waited long enough (limit.Limiter.PromoteAfter) is
// admitted as Interactive, so that it is never starved. It is written on
// each attempt's log line.
type Priority = hook.Priority

// The priorities.
const (
	// PriorityInteractive is for a call a person waits on. It is what a
	// call without a priority is.
	PriorityInteractive = hook.Interactive

	// PriorityBatch is for a call nobody waits on (a nightly job): it
	// takes what Interactive calls leave.
	PriorityBatch = hook.Batch
)

// Caller is who makes a call: its ID, for the budgets and rate limits
// scoped per caller and the identity of a kept answer, and its priority.
// Send takes it in Body.Caller; RoundTrip takes it from the request's
// context (WithCaller, WithPriority).
type Caller = hook.Caller

// callerKey holds a Caller in a context, for RoundTrip.
type callerKey struct{}

// WithCaller returns ctx carrying the caller of the requests RoundTrip
// sends with it. Use an identity, not a secret. Send ignores it: its
// Body says who calls.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// WithPriority returns ctx carrying the priority of the calls RoundTrip
// makes with it, whatever its Transport's Policy.Priority says; the
// caller ctx carries, if any, is kept.
func WithPriority(ctx context.Context, p Priority) context.Context {
	c := callerOf(ctx)
	c.Priority = p
	return WithCaller(ctx, c)
}

// callerOf returns the Caller ctx carries, the zero Caller if none.
func callerOf(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// resolve returns c with its priority set: its own when valid, else the
// policy's, else PriorityInteractive.
func resolve(c Caller, p *Policy) Caller {
	if c.Priority != PriorityInteractive && c.Priority != PriorityBatch {
		c.Priority = PriorityInteractive
		if p.Priority == PriorityBatch {
			c.Priority = PriorityBatch
		}
	}
	return c
}
