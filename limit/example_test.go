package limit_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/limit"
)

// Step on a bucket of 120 requests a minute: slots 500 ms apart, and a
// call that may wait 1 s refused when its slot is further away.
func ExampleStep() {
	r := limit.Rate{Limit: 120, Per: time.Minute}
	var tat int64
	now := int64(0)
	for range 4 {
		var at int64
		var ok bool
		tat, at, ok = limit.Step(tat, now, 0, r, 1, time.Second)
		fmt.Println(time.Duration(at), ok)
	}
	// Output:
	// 0s true
	// 500ms true
	// 1s true
	// 1.5s false
}

// A Limiter refuses a call that may not wait for its slot, saying when
// to try again.
func ExampleLimiter_Wait() {
	l := &limit.Limiter{Limits: []limit.Limit{{Name: "rpm", Requests: limit.Rate{Limit: 2, Per: time.Minute}}}}
	ctx := context.Background()
	_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "gpt-4o"})
	fmt.Println(err)
	done(0)
	_, _, err = l.Wait(ctx, hook.Ask{Provider: "openai", Model: "gpt-4o"})
	var e *limit.Error
	if errors.As(err, &e) {
		fmt.Println(e.Class(), e.Key, e.RetryAfter().Round(time.Second))
	}
	// Output:
	// <nil>
	// rate_limited limit:rpm:openai:requests 30s
}
