package limit

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrLimited is what an *Error is (errors.Is): a call refused because its
// slot was further away than it may wait.
var ErrLimited = errors.New("limit: rate limited")

// Error is a call refused by a limit or a pause: its slot was more than
// the call's maximum wait away, or every in-flight slot of a Concurrent
// limit stayed taken through it. Nothing was taken for it.
type Error struct {
	// Key is the bucket ("limit:<name>:<scope>:requests" or ":tokens"),
	// the concurrency key (":concurrent") or the pause
	// ("pause:<provider>/<model>") that refused the call.
	Key string

	// Limit is the name of the limit that refused the call, "pause" for
	// a pause.
	Limit string

	// Wait is how long from the refusal until the call's slot would have
	// been: when to try again. For a concurrency key, whose slots come
	// back when calls in flight end, it is a fixed hint of 1 s.
	Wait time.Duration
}

func (e *Error) Error() string {
	if strings.HasSuffix(e.Key, ":concurrent") {
		return fmt.Sprintf("sluice: concurrency limited by %s: every slot stayed taken by calls in flight through the call's wait; retry in about %v", e.Key, e.Wait)
	}
	return fmt.Sprintf("sluice: rate limited by %s: the next slot is in %v, beyond the call's wait; retry then", e.Key, e.Wait)
}

// Is reports whether target is ErrLimited.
func (e *Error) Is(target error) bool { return target == ErrLimited }

// Class names the refusal in the attempt log: "rate_limited".
func (e *Error) Class() string { return "rate_limited" }

// RetryAfter returns how long until the call's slot would be free.
func (e *Error) RetryAfter() time.Duration { return e.Wait }

// Refuser names what refused the call, for the attempt log to fold the
// refusals of one bucket into one line: its key.
func (e *Error) Refuser() string { return e.Key }
