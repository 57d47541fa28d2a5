//go:build unix && !linux

package idempotency

// populate does nothing here: each page of a window faults at its first
// write.
func populate([]byte) {}
