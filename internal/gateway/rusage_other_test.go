//go:build !unix

package gateway

import "time"

// rusageCPU is zero where getrusage is not: the CPU figures are left out.
func rusageCPU() time.Duration { return 0 }
