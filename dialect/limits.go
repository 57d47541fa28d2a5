package dialect

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// headerWindow names the headers of one rate-limit window, in canonical
// form: what is left of it, when it is full again, and its size.
type headerWindow struct {
	requests          bool
	left, reset, size string
}

// readWindows calls fn with each window of ws whose count of what is left
// h carries, its reset read by reset as of now. An answer without any of
// those headers costs one map lookup per window and no allocation.
func readWindows(h http.Header, now time.Time, ws []headerWindow, reset func(v string, now time.Time) (time.Duration, bool), fn func(Window)) {
	for _, w := range ws {
		left := limitHeader(h, w.left)
		if left == "" {
			continue
		}
		win := Window{Requests: w.requests, Left: limitCount(left), Size: max(limitCount(limitHeader(h, w.size)), 0)}
		if r, ok := reset(limitHeader(h, w.reset), now); ok && r > 0 {
			win.Reset = r
		}
		fn(win)
	}
}

// durationReset reads a reset given as a wait: a Go duration ("1s",
// "6m0s", "250ms", "1m30.5s") or a bare number of seconds ("6", "0.5").
// ok is false when it is neither.
func durationReset(v string, _ time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if r, err := time.ParseDuration(v); err == nil {
		return r, true
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f < 1e9 {
		return time.Duration(f * float64(time.Second)), true
	}
	return 0, false
}

// timeReset reads a reset given as the time the window is full again, in
// RFC 3339 ("2026-11-30T12:00:05Z"), as a wait from now. ok is false when
// it is not such a time.
func timeReset(v string, now time.Time) (time.Duration, bool) {
	t, err := time.Parse(time.RFC3339, strings.TrimSpace(v))
	if err != nil {
		return 0, false
	}
	return t.Sub(now), true
}

// limitCount reads a whole count; -1 when v is empty, malformed or negative
// (Azure OpenAI's -1 for a window it does not count).
func limitCount(v string) int64 {
	if v == "" {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// limitHeader returns the first value of the canonical key k in h, "" if none.
func limitHeader(h http.Header, k string) string {
	if v := h[k]; len(v) > 0 {
		return v[0]
	}
	return ""
}
