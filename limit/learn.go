package limit

import (
	"net/http"
	"sync"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
)

// MaxPause is the longest pause Learn sets: a reset or Retry-After further
// away is cut to it, so that a wrong or hostile header cannot stop a model
// for longer than an hour.
const MaxPause = time.Hour

// Learn is told each attempt's answer from provider's model: its status,
// its header, read through d, the call's dialect (nil: no header is read),
// and the Retry-After the engine read from it (0 if none). What it learns
// is the model's (or, when SharedLimits says so, the provider's), for
// everything sharing the Store; see "Learned limits" in the package doc.
//
// From a requests window (a dialect.Window with Requests set) of known
// size, with what is left of it and a reset, at least half spent, it
// learns the provider's bucket: its rate and how many requests are out of
// it (the window's spent ones and a tenth of it for calls in flight, at
// most all of them; all of them after a rate-limit 429). Calls then take a
// slot in it as in a configured limit's, so that once it is empty they
// start one by one at the provider's pace.
//
// It pauses the model until the latest of:
//
//   - now + retryAfter, for a 429 that is a rate limit (quota is false:
//     a 429 for an exhausted quota pauses nothing);
//   - for every other window the header says is spent (nothing left),
//     when it hands out its next unit: its reset divided by its size when
//     the header gives the size, else its whole reset. A window the
//     provider does not count is not spent; a spent requests window
//     whose bucket cannot be learned (no size, or a size of 1) pauses so
//     too. A spent tokens window thus holds calls for one token's refill:
//     the call that then needs more gets the provider's 429, whose
//     Retry-After pauses for the rest.
//
// The dialect reads each provider's headers and their reset formats
// (dialect.Dialect.Windows); malformed, negative or past values count for
// nothing. A pause further away than MaxPause is cut to MaxPause, and so
// is a learned bucket's interval (its next request is never further
// away). A Store error goes to OnError: Learn is told after the fact and
// has no caller to hand it to.
func (l *Limiter) Learn(ans hook.Answer) {
	d, provider, model, sent, status, quota, h, retryAfter := ans.Dialect, ans.Provider, ans.Model, ans.Sent, ans.Status, ans.Quota, ans.Header, ans.RetryAfter
	now := time.Now()
	if sent.IsZero() {
		sent = now
	}
	limited := status == http.StatusTooManyRequests && !quota
	ws := readWindows(d, h, now)
	size, left := ws.size, ws.left
	r, paced := Rate{}, false
	if ws.learnable {
		r, paced = windowRate(size, left, ws.reset)
	}
	pause := ws.pause(status, quota, retryAfter, paced)
	p := l.plan(provider)
	key := p.pauseKey(provider, model)
	seen := l.guesses.get(key)
	defer func() {
		// Once what the answer taught is kept, so that the calls of the
		// key's slow start it lets go are held to it.
		l.scouts.answered(key, paced || limited || !seen.Pace.IsZero() || !seen.Rate.IsZero())
	}()
	if !limited && !quota && !seen.Pace.IsZero() && sent.UnixMilli() > seen.Pace.At {
		// An answer of a call sent under the pace: it raises the pace.
		l.pace(key, PaceEvent{Sent: sent.UnixMilli()})
	}
	if !paced && !limited && pause <= 0 {
		return // the answer of a call with room to spare: nothing to keep
	}
	used := size - left
	if !paced && limited {
		// A rate-limit 429 without a window to read: the bucket learned
		// before, if any, is empty.
		if lr, err := l.active().Learned(key); err == nil && !lr.Rate.IsZero() {
			r, paced = lr.Rate, true
		}
	}
	if limited && !(ws.learnable && paced && seen.Rate.IsZero() && seen.Pace.IsZero()) {
		// The provider refused a call Sluice let go believing there was
		// room: the pace was too high (or there was none). A first 429
		// whose own headers teach the bucket is the provider's first
		// word, not a belief proved wrong: its bucket paces from now.
		ceiling := p.ceiling
		if c := r.perSecond(); c > 0 && (ceiling == 0 || c < ceiling) {
			ceiling = c
		}
		l.pace(key, PaceEvent{Sent: sent.UnixMilli(), Limited: true, RetryAfter: int64(retryAfter), Ceiling: ceiling})
	}
	if paced {
		if limited {
			used = r.Limit // the provider says its bucket is empty
		} else {
			used = min(used+headroom(size), size)
		}
		if err := l.active().Learn(key, r, used); err != nil {
			l.local().Learn(key, r, used) // this process at least keeps it
			l.storeFailed(err)
		}
	}
	if pause <= 0 {
		return
	}
	l.stats.paused()
	if err := l.active().Pause(key, now.Add(pause)); err != nil {
		l.local().Pause(key, now.Add(pause)) // this process at least keeps it
		l.storeFailed(err)
	}
}

// pace tells the Store's pace of key an answer, and keeps what it left as
// the pace last seen; when the Store fails, this process's own Memory
// learns it.
func (l *Limiter) pace(key string, e PaceEvent) {
	st := l.active()
	p, err := st.Pace(key, e)
	if err != nil && st == l.Store {
		l.storeFailed(err)
		p, _ = l.local().Pace(key, e)
	}
	if st == l.store() && err == nil {
		g := l.guesses.get(key)
		g.Pace = p
		l.guesses.set(key, Learned(g))
	}
}

// headroom returns how many requests of a window of size the learned
// bucket keeps for calls in flight that the provider had not counted when
// it answered: a tenth of the window, rounded up. An answer raises the
// bucket's TAT to what the provider counted; calls that took a slot in
// the bucket and had not reached the provider yet were in the TAT, and a
// raise above them drops them from it, as do calls that started before
// the bucket was learned. The headroom keeps room for them while the
// window drains; an answer saying it is spent sets it to empty, not
// beyond, so that the pace once it is spent stays the provider's.
func headroom(size int64) int64 { return (size + 9) / 10 }

// maxLearnedPer bounds the period of a learned rate, so that its
// nanoseconds and Redis's doubles hold it exactly.
const maxLearnedPer = 7 * 24 * time.Hour

// windowRate returns the bucket a requests window of size requests, left
// of them left, full again after reset, tells: size requests refilled
// continuously, size per reset·size/(size−left−1), and ok; ok is false
// while more than half the window is left, or when no request is known
// to be out of it (size − left − 1 < 1).
//
// The provider's reset is when its bucket is full again ("the time until
// the rate limit resets to its initial state"), so size − left requests
// refill in reset. But left is a whole count of a bucket that holds
// fractions between requests (or refills a whole request at a time, the
// next one in less than an interval): between size − left − 1 and
// size − left requests refill in reset. The rate takes the lower, never
// faster than the provider, by 1/(size − left) at most: 0.8% for a window
// of 120 spent. Half spent or more, that is 2/size at most; with more
// left it could be off by far more, and the bucket has room anyway.
func windowRate(size, left int64, reset time.Duration) (Rate, bool) {
	n := size - left - 1
	if n < 1 || 2*left > size {
		return Rate{}, false
	}
	per := float64(reset) * float64(size) / float64(n)
	per = min(per, float64(MaxPause)*float64(size), float64(maxLearnedPer)) // an interval of at most MaxPause
	if per < float64(size) {
		return Rate{}, false // under a nanosecond a request: nothing to pace
	}
	return Rate{Limit: size, Per: time.Duration(per), Burst: size}, true
}

// PauseFor returns how long from now an answer pauses its model (0: not at
// all), as Learn says of a provider whose buckets it does not learn: each
// spent window d reads in h, the requests window too, pauses until its
// next unit. An answer without rate-limit headers costs what d takes to
// find none (a map lookup per window) and no allocation.
func PauseFor(d dialect.Dialect, now time.Time, status int, quota bool, h http.Header, retryAfter time.Duration) time.Duration {
	return readWindows(d, h, now).pause(status, quota, retryAfter, false)
}

// windows is what an answer's rate-limit windows tell: the first sound
// requests window, and the pauses the spent ones ask for.
type windows struct {
	// learnable reports that a requests window was sound: a size of 1 or
	// more, 0 to size left, a reset after now; size, left and reset are
	// the first such.
	learnable   bool
	size, left  int64
	reset       time.Duration
	requests    time.Duration // the pause the spent requests windows ask for
	others      time.Duration // the pause the other spent windows ask for
	collectWins func(dialect.Window)
}

// collectors keep windows whose collectWins is bound once, so that
// asking a dialect for an answer's windows allocates nothing.
var collectors = sync.Pool{New: func() any {
	w := new(windows)
	w.collectWins = w.collect
	return w
}}

// readWindows returns what the windows d reads in h tell, as of now.
func readWindows(d dialect.Dialect, h http.Header, now time.Time) windows {
	if d == nil || len(h) == 0 {
		return windows{}
	}
	w := collectors.Get().(*windows)
	fn := w.collectWins
	*w = windows{collectWins: fn}
	d.Windows(h, now, fn)
	out := *w
	out.collectWins = nil
	collectors.Put(w)
	return out
}

// collect takes one window in.
func (w *windows) collect(win dialect.Window) {
	if win.Requests && !w.learnable && win.Size >= 1 && win.Left >= 0 && win.Left <= win.Size && win.Reset > 0 {
		w.learnable, w.size, w.left, w.reset = true, win.Size, win.Left, win.Reset
	}
	if win.Left != 0 || win.Reset <= 0 {
		return // not spent, or no sound reset: nothing to wait for
	}
	if win.Requests {
		w.requests = max(w.requests, oneUnit(win.Reset, win.Size))
	} else {
		w.others = max(w.others, oneUnit(win.Reset, win.Size))
	}
}

// pause returns how long the answer pauses its model: a rate-limit 429's
// Retry-After, and each spent window's next unit (the requests windows'
// only when not paced: their bucket is learned instead), at most
// MaxPause.
func (w windows) pause(status int, quota bool, retryAfter time.Duration, paced bool) time.Duration {
	var d time.Duration
	if status == http.StatusTooManyRequests && !quota && retryAfter > 0 {
		d = retryAfter
	}
	d = max(d, w.others)
	if !paced {
		d = max(d, w.requests)
	}
	return min(max(d, 0), MaxPause)
}

// oneUnit is how long a spent window takes to hand out its next unit: the
// providers' reset is when the window is whole again, and it fills
// evenly, so with its size known the next unit comes after reset / size.
// Pausing for the whole reset would stop every call for a minute each
// time a busy window reads 0, when a slot frees every reset / size. With
// the size unknown (0), the whole reset.
func oneUnit(reset time.Duration, size int64) time.Duration {
	if size <= 0 {
		return reset
	}
	return reset / time.Duration(size)
}
