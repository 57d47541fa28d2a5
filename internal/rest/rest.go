// Package rest keeps a shared store that failed from being asked again at
// once. After a failure its callers go without it for Period (they fall
// back on their own memory, or fail, or allow, as each decides), so that a
// store that hangs (a Redis stopped mid-reply) costs one call a second its
// timeout, not every call.
package rest

import (
	"sync/atomic"
	"time"
)

// Period is how long a store rests after it failed.
const Period = time.Second

// Rest is the rest of one store. The zero value is a store that has not
// failed. It is safe for concurrent use.
type Rest struct {
	down atomic.Pointer[failure]
}

// failure is the store's last failure: its error, and until when (Unix ns)
// the store rests.
type failure struct {
	err   error
	until int64
}

// Err returns the error the store failed with while it rests at now, else
// nil: then the store may be asked. One atomic load while it does not
// rest.
func (r *Rest) Err(now time.Time) error {
	f := r.down.Load()
	if f == nil {
		return nil
	}
	if now.UnixNano() < f.until {
		return f.err
	}
	r.down.CompareAndSwap(f, nil) // rested: it may be asked again
	return nil
}

// Resting reports whether the store rests now: one atomic load, and no
// clock read, while it has not failed.
func (r *Rest) Resting() bool {
	if r.down.Load() == nil {
		return false
	}
	return r.Err(time.Now()) != nil
}

// Fail notes that the store failed with err (not nil) at now: it rests
// until Period after.
func (r *Rest) Fail(now time.Time, err error) {
	r.down.Store(&failure{err: err, until: now.Add(Period).UnixNano()})
}
