// Package breaker is a circuit breaker whose state can be shared between
// goroutines, processes and hosts.
//
// A Breaker is closed while its provider answers. It opens after
// Settings.Failures consecutive failures, or after Slow.Count slow attempts
// within Slow.Window, and then fails calls at once with an *OpenError until
// Settings.Cool has passed. Then exactly one probe is let through, across
// everything sharing the Store: its success closes the breaker, its failure
// opens it again and restarts the cool clock. The probe is a lease: a holder
// that never reports is replaced when Settings.Lease ends.
//
// Admission is two-step, so that an outcome known late (a stream, judged at
// its end) is reported when it is known:
//
//	p, err := b.Allow()
//	if err != nil {
//		return err // *OpenError: fail fast
//	}
//	resp, err := call()
//	p.Done(breaker.Failure, time.Since(start))
//
// The transition rules are the pure function Settings.Next; a Store applies
// them atomically to a Record, and says which state it left, so that
// Settings.OnStateChange hears of each change this process makes once. Memory keeps records in one process. Package
// filestore keeps them in a state directory shared by every process of a
// host (one small memory-mapped file per breaker that has something to
// share, none for an idle closed one, changes under flock, a closed
// breaker's fast path lock-free and without a system call), built on
// package state; package redisstore, in Redis for many hosts (transitions
// as Lua scripts on Redis's clock, the closed fast path served from a
// cache refreshed every 250 ms).
package breaker
