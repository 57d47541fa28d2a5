// Package spend caps and prices the calls of a sluice.Transport: budgets
// per period and scope, model prices, the usage read from answers, and a
// ledger that holds each call's worst case while it runs and settles it to
// what the call cost.
//
// A Meter is what a Transport is given (Transport.Meter). Before a call, it
// reserves the call's worst case under every Budget that applies, or
// refuses the call with a *BudgetError (errors.Is ErrExhausted); each
// answered attempt's bytes pass through its Count, which reads the usage
// the provider reported as the call's dialect says (dialect.Dialect's
// Usage and StreamUsage) and prices it (Price.Cost); when the call ends,
// the reservation settles itself to the attempts' cost.
//
// The Ledger keeps what was spent and what is held, per key (Budget.Key
// writes the one key format). NewFileLedger keeps it in a state directory
// (package state) shared by a host's processes, on counters changed by
// atomic operations, so that a call takes no file lock for its money;
// NewLedger keeps it in any store of small records with an atomic
// read-modify-write (state.Memory, the default); package spend/redisledger
// keeps it in Redis, for many hosts. Amounts are whole nano-dollars, so
// that concurrent holds never overshoot a cap.
package spend
