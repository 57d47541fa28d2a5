// Package state keeps small named records that the goroutines of one
// process, or the processes of one host, share: what a breaker store, a
// spend ledger or a rate limiter stands on.
//
// Memory keeps records in one process. File keeps them in a state
// directory shared by every process of a host: one small memory-mapped
// file per record that has something to keep, none for a name without
// one, at most FileOptions.MaxOpen open at once (the least recently used
// closed first), changes made under the file's flock (Transform: lock,
// read, change, write, unlock), reads made lock-free through the shared
// mapping with a sequence lock, without a system call or a write.
//
// A File's records are of kinds: the File's own (".record" files, through
// File.Transform, Snapshot and RemoveRecords) and any a user adds with
// File.Kind, choosing the kind's file extension and how its bytes decode.
// Kind.Load caches a record's decoded value and serves it, in six atomic
// loads, until the record changes. File.Counters makes a kind whose records
// are counters changed with atomic operations on the shared mapping,
// without the file lock: what a spend ledger reserves money with.
package state
