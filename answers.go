package sluice

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/internal/credential"
)

// ErrIdempotencyKeyReused is the error of a request whose Idempotency-Key
// came before with another request (method, path, query or body): the
// draft IETF Idempotency-Key header's 422.
var ErrIdempotencyKeyReused = errors.New("sluice: the Idempotency-Key was sent before with another request; send a new key for a new request")

// InProgressError is the error of a request whose Idempotency-Key names a
// call still in flight (in this process or another sharing the store)
// when the wait for it ended: the draft's 409. Until is when that call's
// mark expires at the latest.
type InProgressError struct{ Until time.Time }

func (e *InProgressError) Error() string {
	return "sluice: a call with this Idempotency-Key is still in flight, until " + e.Until.UTC().Format(time.RFC3339) + " at most"
}

// defaultAnswerTTL is Transport.AnswerTTL's default.
const defaultAnswerTTL = 24 * time.Hour

// callerNames are where a caller's credentials travel, in every dialect:
// all of them name the caller of an Idempotency-Key.
var callerNames = credential.NewNames(dialect.KeyHeaders()...)

// remember handles the request's Idempotency-Key before its call, under
// Transport.Answers: it replays a kept answer, refuses a key reused or
// still in flight, or takes the call's mark (done false). A store that
// fails lets the call run un-deduplicated.
func (c *call) remember(key string) (resp *http.Response, err error, done bool) {
	t := c.t
	if err := idempotency.CheckValue(key); err != nil {
		return nil, fmt.Errorf("sluice: Idempotency-Key: %w", err), true
	}
	scope := cmp.Or(t.AnswerScope, t.Provider, c.req.URL.Host)
	caller := c.caller.ID
	if caller == "" {
		caller = callerNames.Caller(c.req.Header, c.req.URL)
	}
	id := idempotency.Key{Scope: scope, Caller: caller, Value: key}.ID()
	fp := idempotency.Fingerprint(c.req.Method, c.req.URL.Path, c.req.URL.Query(), c.in.Bytes)
	total := c.policy.Timeout.Total
	lease := total + min(total, 10*time.Second)
	res, err := t.Answers.Begin(id, fp, lease, time.Now())
	if err == nil && res.Verdict == idempotency.InFlight {
		res, err = idempotency.Wait(c.ctx, t.Answers, id, fp, lease, time.Until(c.deadline))
	}
	if err != nil {
		if ctxErr := c.timedOut(); ctxErr != nil {
			return nil, ctxErr, true
		}
		c.idem = idemStoreError // the store failed: the call runs as if it had no key
		return nil, nil, false
	}
	switch res.Verdict {
	case idempotency.Replay:
		return c.replay(res.Answer), nil, true
	case idempotency.Conflict:
		return nil, ErrIdempotencyKeyReused, true
	case idempotency.InFlight:
		return nil, &InProgressError{Until: res.Until}, true
	}
	c.mark = &res.Mark
	c.secrets = callerNames.Secrets(c.req.Header, c.req.URL)
	return nil, nil, false
}

// replay returns the kept answer a as the call's response, and logs it.
func (c *call) replay(a *idempotency.Answer) *http.Response {
	h := make(http.Header, len(a.Header)+4)
	for k, v := range a.Header {
		h[k] = v
	}
	h["Idempotent-Replayed"] = []string{"true"}
	h["Sluice-Replay-Of"] = []string{a.RequestID}
	h["Sluice-Request-Id"] = []string{c.id}
	h["Sluice-Attempts"] = []string{"0"}
	if !a.Stream {
		h["Content-Length"] = []string{strconv.Itoa(len(a.Body))}
	}
	line := Attempt{TS: time.Now(), RequestID: c.id, Attempt: 1, Policy: c.policy.Name, Provider: c.provider,
		Model: c.model, Method: c.req.Method, Path: c.req.URL.Path, Status: a.Status, Outcome: OutcomeReplayed,
		Breaker: "closed", BytesIn: int64(len(a.Body)), Stream: a.Stream, ReplayOf: a.RequestID, SavedUSD: a.CostUSD, Priority: c.caller.Priority}
	c.t.Log.Write(&line)
	if c.t.Observe != nil {
		c.t.Observe(&line)
	}
	return &http.Response{Status: strconv.Itoa(a.Status) + " " + http.StatusText(a.Status), StatusCode: a.Status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: h, Request: c.req,
		Body: io.NopCloser(bytes.NewReader(a.Body)), ContentLength: int64(len(a.Body))}
}

// forget clears the call's mark, keeping nothing: it ended without a whole
// answer.
func (c *call) forget() {
	if m := c.mark; m != nil {
		c.mark = nil
		c.t.Answers.Release(*m)
	}
}

// What became of the answer of a call with an Idempotency-Key, as its
// log line's idempotency field says (Attempt.Idempotency).
const (
	// IdempotencyKept: the answer was kept, to be replayed.
	IdempotencyKept = "kept"
	// IdempotencyTooLarge: a whole 2xx answer longer than AnswerMax,
	// handed over and not kept.
	IdempotencyTooLarge = "too_large"
	// IdempotencyCredential: a whole 2xx answer that holds a credential
	// the request carried (an upstream that echoes it), not kept.
	IdempotencyCredential = "credential"
	// IdempotencyMarkLost: the call outlived its mark's lease, and another
	// took the key: its answer was not kept.
	IdempotencyMarkLost = "mark_lost"
	// IdempotencyStoreError: the answer store failed, so the call ran as
	// if it had no key (on its first line), or its answer was not kept
	// (on its last).
	IdempotencyStoreError = "store_error"
)

// idemOutcome is what became of a keyed call's answer, kept in the call
// as an index of idemOutcomes until its line says it.
type idemOutcome uint8

const (
	idemNone idemOutcome = iota
	idemKept
	idemTooLarge
	idemCredential
	idemMarkLost
	idemStoreError
)

// idemOutcomes are the outcomes as the line's idempotency field says them.
var idemOutcomes = [...]string{"", IdempotencyKept, IdempotencyTooLarge, IdempotencyCredential, IdempotencyMarkLost, IdempotencyStoreError}

// keepAnswer keeps the answer b handed over, read whole to its end: its
// status, content headers and every byte (a stream's events in order).
// Anything else clears the mark, as does an answer that holds one of the
// credentials its request carried (an upstream that echoes the request):
// nothing kept holds a credential. What became of it goes on the line of
// b's attempt, which is written next.
func (c *call) keepAnswer(b *body, a *attempt) {
	m := c.mark
	if m == nil {
		return
	}
	c.mark = nil
	switch {
	case a.rec.Outcome != OutcomeOK:
		c.t.Answers.Release(*m)
		return
	case b.keptOver:
		c.idem = idemTooLarge
	case c.secrets.In(b.kept) || (b.keyed != nil && callerNames.Secrets(b.keyed, nil).In(b.kept)):
		c.idem = idemCredential
	}
	if c.idem != idemNone {
		c.t.Answers.Release(*m)
		return
	}
	ttl := c.t.AnswerTTL
	if ttl <= 0 {
		ttl = defaultAnswerTTL
	}
	kept := &idempotency.Answer{Status: b.status, Header: idempotency.ContentHeaders(b.header),
		Body: b.kept, Stream: b.stream, RequestID: c.id, CostUSD: c.cost}
	switch err := c.t.Answers.Keep(*m, kept, ttl, time.Now()); {
	case err == nil:
		c.idem = idemKept
		return
	case errors.Is(err, idempotency.ErrTooLarge):
		c.idem = idemTooLarge
	case errors.Is(err, idempotency.ErrMarkLost):
		c.idem = idemMarkLost
	default:
		c.idem = idemStoreError
	}
	c.t.Answers.Release(*m)
}

// answerMax is the longest answer the Transport keeps.
func (t *Transport) answerMax() int {
	if t.AnswerMax > 0 {
		return int(min(t.AnswerMax, math.MaxInt32))
	}
	return idempotency.DefaultMaxAnswer
}

// keep notes bytes handed to the caller, for an answer to keep.
func (b *body) keep(p []byte) {
	if b.keptOver {
		return
	}
	if len(b.kept)+len(p) > b.a.call.t.answerMax() {
		b.kept, b.keptOver = nil, true
		return
	}
	b.kept = append(b.kept, p...)
}
