package limit_test

import (
	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/limit"
)

// A Limiter is what a sluice.Transport waits on.
var _ sluice.Limiter = (*limit.Limiter)(nil)
