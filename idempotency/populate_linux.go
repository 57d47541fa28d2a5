package idempotency

import "syscall"

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14).
const madvPopulateWrite = 23

// populate makes the pages of b, a part of a shared mapping, writable in
// one call (MADV_POPULATE_WRITE), where a write to each would take a fault
// of its own. An older kernel refuses the advice: the writes then fault
// as before.
func populate(b []byte) {
	if len(b) > 0 {
		syscall.Madvise(b, madvPopulateWrite)
	}
}
