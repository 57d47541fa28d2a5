package sluice

import (
	"errors"
	"io"
	"math"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/request"
)

// Attempt is one upstream attempt: one line of the attempt log. The JSON
// names are a contract that operators' tools read.
//
// Calls refused without an upstream attempt (outcome circuit_open or
// budget_exhausted) are each passed to Transport.Observe, but the log
// writes at most one line a second for each breaker and each budget: the
// first refusal in a quiet period at once with Refused 1, later ones
// counted and written as one line, carrying their count in Refused, with
// the next refusal after the second (or the next line of the log after it,
// or AttemptLog.Flush).
type Attempt struct {
	TS                time.Time `json:"ts"`
	RequestID         string    `json:"request_id"`
	Attempt           int       `json:"attempt"`
	Policy            string    `json:"policy"`
	Provider          string    `json:"provider"`
	Model             string    `json:"model"`
	Method            string    `json:"method"`
	Path              string    `json:"path"`
	Status            int       `json:"status"`
	Outcome           Outcome   `json:"outcome"`
	Error             string    `json:"error"`
	LatencyMS         float64   `json:"latency_ms"`
	TTFBMS            float64   `json:"ttfb_ms"`
	BytesOut          int64     `json:"bytes_out"`
	BytesIn           int64     `json:"bytes_in"`
	Breaker           string    `json:"breaker"`
	RetryInMS         float64   `json:"retry_in_ms"`
	QueuedMS          float64   `json:"queued_ms,omitempty"` // waited for a rate-limit slot
	Priority          Priority  `json:"priority,omitempty"`  // interactive | batch (see Priority)
	Key               string    `json:"key,omitempty"`       // short hash of the pool key used (Transport.Keys)
	UpstreamRequestID string    `json:"upstream_request_id,omitempty"`
	CostUSD           float64   `json:"cost_usd,omitempty"`
	Stream            bool      `json:"stream"`

	// Hedge is, on the lines of a hedge's attempts, HedgeSent; on the
	// line of a call whose hedge was refused, HedgeRefused (Policy.Hedge);
	// omitted on other lines.
	Hedge HedgeMark `json:"hedge,omitempty"`

	// ReplayOf is, on the line of a call answered from a kept answer
	// (outcome replayed), the request id of the call that answered first;
	// omitted on other lines.
	ReplayOf string `json:"replay_of,omitempty"`

	// Translated is, on the line of an attempt to a fallback of another
	// dialect, the translation: the call's dialect and the target's
	// (openai->anthropic), as the Sluice-Translated header says.
	Translated string `json:"translated,omitempty"`

	// SavedUSD is, on the line of a call answered from a kept answer, what
	// the call that answered first cost: what the replay did not spend.
	SavedUSD float64 `json:"saved_usd,omitempty"`

	// Idempotency is, on a line of a call with an Idempotency-Key, what
	// became of its answer (IdempotencyKept, IdempotencyTooLarge, …): on
	// the last line of a call whose whole 2xx answer was handed over, and
	// on the first of a call the answer store failed. Omitted otherwise.
	Idempotency string `json:"idempotency,omitempty"`

	// Refused is, on the line of a refused call, how many refused calls
	// that line stands for (see above); 0, and omitted, on other lines.
	Refused int `json:"refused,omitempty"`

	// RefusedIDs are, on the line of refused calls, the request ids of
	// every call the line stands for, in the order they were refused (the
	// line's own RequestID is the last): each id a refused caller was
	// given is in the log. A line lists at most 256; more refusals under
	// one breaker or budget in a second get a line per 256.
	RefusedIDs []string `json:"refused_ids,omitempty"`

	// RetryBudgetExhausted reports that the attempt would have been
	// retried but the retry budget refused it: its Outcome is its final
	// one, not retry. It is not written to the log.
	RetryBudgetExhausted bool `json:"-"`

	// Target is the target the attempt went to, or was refused for: 0 the
	// Transport's primary, i its Fallbacks[i-1]. It is not written to the
	// log (provider and model say who it was).
	Target int `json:"-"`
}

// Outcome is how an attempt ended, as written in the attempt log.
type Outcome string

// The outcomes of an attempt.
const (
	OutcomeOK              Outcome = "ok"
	OutcomeRetry           Outcome = "retry"
	OutcomeFail            Outcome = "fail"
	OutcomeTimeout         Outcome = "timeout"
	OutcomeCircuitOpen     Outcome = "circuit_open"
	OutcomeBudgetExhausted Outcome = "budget_exhausted"
	OutcomeClientCancel    Outcome = "client_cancel"
	OutcomeStreamStalled   Outcome = "stream_stalled"

	// OutcomeSkipped is a target skipped without a call: the request
	// asks what its dialect cannot express (a fallback of another
	// dialect), or what its model cannot take (Transport.Models). The
	// line's error is "skipped: " and the reason.
	OutcomeSkipped Outcome = "skipped"

	// OutcomeResumed is an attempt whose stream broke after its answer
	// began, continued on the next attempt (Policy.Resume).
	OutcomeResumed Outcome = "resumed"

	// OutcomeReplayed is a call answered from the answer kept for its
	// Idempotency-Key: no upstream attempt, no cost.
	OutcomeReplayed Outcome = "replayed"
)

// AttemptLog writes attempts as JSON lines. Each line reaches the writer in
// a single Write call, so concurrent writers appending to one file opened
// with O_APPEND (goroutines or processes) never interleave. It is safe for
// concurrent use.
type AttemptLog struct {
	w       io.Writer
	mu      sync.Mutex // serialises writes to w; appendJSON runs outside it
	pool    sync.Pool
	refused refusals // shared by every Transport writing here
}

// NewAttemptLog returns a log that writes to w. A nil w discards.
func NewAttemptLog(w io.Writer) *AttemptLog {
	return &AttemptLog{w: w}
}

// Write encodes a as one line and writes it with one call to the writer.
// Before it, it writes the folded refusals whose second ended by a.TS.
func (l *AttemptLog) Write(a *Attempt) error {
	if l == nil || l.w == nil {
		return nil
	}
	for _, r := range l.refused.overdue(a.TS) {
		l.write(&r)
	}
	return l.write(a)
}

// WriteRefused logs a call refused without an upstream attempt, under key
// (the refusing breaker's or budget's name): at once when it is the first
// refusal under key in a second, else folded into the key's next line (see
// Attempt). It is safe for concurrent use by every Transport sharing l.
func (l *AttemptLog) WriteRefused(key string, a *Attempt) error {
	if l == nil || l.w == nil {
		return nil
	}
	n := l.refused.admit(key, a) // first: a joins its key's pending count
	for _, r := range l.refused.overdue(a.TS) {
		l.write(&r)
	}
	if n == 0 {
		return nil
	}
	line := *a
	line.Refused = n
	a.RefusedIDs = nil // the caller's Attempt, as it came (Observe sees it)
	return l.write(&line)
}

// Flush writes the refusals folded and not yet written, one line per
// breaker or budget. Call it before closing the log's writer.
func (l *AttemptLog) Flush() error {
	if l == nil || l.w == nil {
		return nil
	}
	var err error
	for _, r := range l.refused.all() {
		if werr := l.write(&r); err == nil {
			err = werr
		}
	}
	return err
}

func (l *AttemptLog) write(a *Attempt) error {
	bp, _ := l.pool.Get().(*[]byte)
	if bp == nil {
		b := make([]byte, 0, 512)
		bp = &b
	}
	line := a.AppendJSON((*bp)[:0])
	line = append(line, '\n')
	l.mu.Lock()
	_, err := l.w.Write(line)
	l.mu.Unlock()
	*bp = line
	l.pool.Put(bp)
	return err
}

// AppendJSON appends a as one JSON object, without a newline, to dst.
func (a *Attempt) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"ts":"`...)
	dst = appendTS(dst, a.TS)
	dst = append(dst, `","request_id":`...)
	dst = appendString(dst, a.RequestID)
	dst = append(dst, `,"attempt":`...)
	dst = strconv.AppendInt(dst, int64(a.Attempt), 10)
	dst = append(dst, `,"policy":`...)
	dst = appendString(dst, a.Policy)
	dst = append(dst, `,"provider":`...)
	dst = appendString(dst, a.Provider)
	dst = append(dst, `,"model":`...)
	dst = appendString(dst, request.Loggable(a.Model))
	dst = append(dst, `,"method":`...)
	dst = appendString(dst, a.Method)
	dst = append(dst, `,"path":`...)
	dst = appendString(dst, a.Path)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(a.Status), 10)
	dst = append(dst, `,"outcome":`...)
	dst = appendString(dst, string(a.Outcome))
	dst = append(dst, `,"error":`...)
	dst = appendString(dst, a.Error)
	dst = append(dst, `,"latency_ms":`...)
	dst = appendFloat(dst, a.LatencyMS)
	dst = append(dst, `,"ttfb_ms":`...)
	dst = appendFloat(dst, a.TTFBMS)
	dst = append(dst, `,"bytes_out":`...)
	dst = strconv.AppendInt(dst, a.BytesOut, 10)
	dst = append(dst, `,"bytes_in":`...)
	dst = strconv.AppendInt(dst, a.BytesIn, 10)
	dst = append(dst, `,"breaker":`...)
	dst = appendString(dst, a.Breaker)
	dst = append(dst, `,"retry_in_ms":`...)
	dst = appendFloat(dst, a.RetryInMS)
	if a.QueuedMS != 0 {
		dst = append(dst, `,"queued_ms":`...)
		dst = appendFloat(dst, a.QueuedMS)
	}
	if a.Priority != "" {
		dst = append(dst, `,"priority":`...)
		dst = appendString(dst, string(a.Priority))
	}
	if a.Key != "" {
		dst = append(dst, `,"key":`...)
		dst = appendString(dst, a.Key)
	}
	if a.UpstreamRequestID != "" {
		dst = append(dst, `,"upstream_request_id":`...)
		dst = appendString(dst, a.UpstreamRequestID)
	}
	if a.CostUSD != 0 {
		dst = append(dst, `,"cost_usd":`...)
		dst = strconv.AppendFloat(dst, a.CostUSD, 'f', -1, 64)
	}
	dst = append(dst, `,"stream":`...)
	dst = strconv.AppendBool(dst, a.Stream)
	if a.Refused != 0 {
		dst = append(dst, `,"refused":`...)
		dst = strconv.AppendInt(dst, int64(a.Refused), 10)
	}
	if a.ReplayOf != "" {
		dst = append(dst, `,"replay_of":`...)
		dst = appendString(dst, a.ReplayOf)
	}
	if a.Translated != "" {
		dst = append(dst, `,"translated":`...)
		dst = appendString(dst, a.Translated)
	}
	if a.Hedge != HedgeNone {
		dst = append(dst, `,"hedge":`...)
		dst = appendString(dst, a.Hedge.String())
	}
	if a.SavedUSD != 0 {
		dst = append(dst, `,"saved_usd":`...)
		dst = strconv.AppendFloat(dst, a.SavedUSD, 'f', -1, 64)
	}
	if a.Idempotency != "" {
		dst = append(dst, `,"idempotency":`...)
		dst = appendString(dst, a.Idempotency)
	}
	if len(a.RefusedIDs) > 0 {
		dst = append(dst, `,"refused_ids":[`...)
		for i, id := range a.RefusedIDs {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, id)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// tsLayout is the layout of the attempt log's ts: RFC 3339 with
// milliseconds, in UTC.
const tsLayout = "2006-01-02T15:04:05.000Z07:00"

// appendTS appends t in UTC as tsLayout formats it, without parsing the
// layout for years 0 to 9999 (AppendFormat for the others).
func appendTS(dst []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, tsLayout)
	}
	hour, min, sec := t.Clock()
	dst = appendDigits(dst, year, 4)
	dst = append(dst, '-')
	dst = appendDigits(dst, int(month), 2)
	dst = append(dst, '-')
	dst = appendDigits(dst, day, 2)
	dst = append(dst, 'T')
	dst = appendDigits(dst, hour, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, min, 2)
	dst = append(dst, ':')
	dst = appendDigits(dst, sec, 2)
	dst = append(dst, '.')
	dst = appendDigits(dst, t.Nanosecond()/1e6, 3)
	return append(dst, 'Z')
}

// appendDigits appends n, 0 ≤ n < 10^width, in width decimal digits.
func appendDigits(dst []byte, n, width int) []byte {
	var b [4]byte
	for i := width - 1; i >= 0; i-- {
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return append(dst, b[:width]...)
}

// appendFloat appends f rounded to microseconds, as JSON (no NaN or Inf).
func appendFloat(dst []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		f = 0
	}
	n := math.Round(f * 1000)
	if math.Signbit(n) || n >= 1e12 {
		return strconv.AppendFloat(dst, n/1000, 'f', -1, 64)
	}
	// Thousandths below 10^12 print exactly as the shortest float does.
	k := int64(n)
	dst = strconv.AppendInt(dst, k/1000, 10)
	frac := k % 1000
	if frac == 0 {
		return dst
	}
	width := 3
	for frac%10 == 0 {
		frac /= 10
		width--
	}
	return appendDigits(append(dst, '.'), int(frac), width)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

const hexDigits = "0123456789abcdef"

// plainASCII reports the ASCII bytes a JSON string carries as they are:
// neither a control character, nor '"' or '\\', nor HTML's '<', '>', '&'.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// logRefusal logs a call refused by the breaker.
func (c *call) logRefusal(n int, err error) {
	state := breaker.Open
	name := c.brk.Name()
	var oe *breaker.OpenError
	if errors.As(err, &oe) {
		state, name = oe.State, oe.Name
	}
	c.logUnsent("breaker:"+name, n, OutcomeCircuitOpen, "circuit_open", state)
}

// logUnsent logs an attempt refused before it was sent: no status, no
// bytes, no time. Every one is observed; the log folds them per key (the
// refusing breaker or budget), at most one line a second.
func (c *call) logUnsent(key string, n int, outcome Outcome, class string, state breaker.State) {
	a := Attempt{
		TS: time.Now(), RequestID: c.id, Attempt: n, Policy: c.policy.Name,
		Provider: c.provider, Model: c.model, Method: c.treq.Method, Path: c.treq.URL.Path,
		Outcome: outcome, Error: class, Breaker: state.String(), Target: c.target, Priority: c.caller.Priority,
	}
	c.t.Log.WriteRefused(key, &a)
	if c.t.Observe != nil {
		c.t.Observe(&a)
	}
}
