package sluice

import (
	"context"

	"github.com/sluice-llm/sluice/internal/priority"
)

// Priority is a call's priority where it waits for a rate-limit or
// concurrency slot (Transport.Limiter): where slots are scarce, a waiting
// PriorityInteractive call is admitted before any waiting PriorityBatch
// call, across every process and host sharing the limiter's state; a
// Batch call that has waited long enough (limit.Limiter.PromoteAfter) is
// admitted as Interactive, so that it is never starved. It is written on
// each attempt's log line.
type Priority string

// The priorities.
const (
	// PriorityInteractive is for a call a person waits on. It is what a
	// call without a priority is.
	PriorityInteractive Priority = priority.Interactive

	// PriorityBatch is for a call nobody waits on (a nightly job): it
	// takes what Interactive calls leave.
	PriorityBatch Priority = priority.Batch
)

// WithPriority returns ctx carrying the priority of the calls made with
// it: a request sent with such a context has priority p, whatever its
// Transport's Policy.Priority says.
func WithPriority(ctx context.Context, p Priority) context.Context {
	return priority.With(ctx, string(p))
}

// priorityOf returns the priority of a call made with ctx under policy p:
// the context's, else the policy's, else PriorityInteractive; and ctx,
// carrying it when the Limiter could not read it from ctx alone.
func priorityOf(ctx context.Context, p *Policy) (Priority, context.Context) {
	if v := priority.From(ctx); priority.Valid(v) {
		return Priority(v), ctx
	}
	if p.Priority == PriorityBatch {
		return PriorityBatch, priority.With(ctx, priority.Batch)
	}
	return PriorityInteractive, ctx
}
