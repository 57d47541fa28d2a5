//go:build unix && !linux

package idempotency_test

import "errors"

// setFileSizeLimit is set on Linux only.
func setFileSizeLimit(uint64) error { return errors.ErrUnsupported }
