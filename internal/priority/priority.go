// Package priority carries a call's priority in its context, so that the
// engine (package sluice) and the rate limiter (package limit) agree on it
// without either importing the other.
package priority

import "context"

// The priorities a call may have.
const (
	Interactive = "interactive"
	Batch       = "batch"
)

type key struct{}

// With returns ctx carrying priority p ("interactive" or "batch").
func With(ctx context.Context, p string) context.Context {
	return context.WithValue(ctx, key{}, p)
}

// From returns the priority ctx carries, "" if none.
func From(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	p, _ := ctx.Value(key{}).(string)
	return p
}

// Valid reports whether p names a priority.
func Valid(p string) bool { return p == Interactive || p == Batch }
