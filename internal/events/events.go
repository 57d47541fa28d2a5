// Package events writes the gateway's operator events: what someone on
// call must see on the console (`sluice serve` logs to stderr, which
// journalctl keeps) while the attempt log keeps the detail: a breaker
// changing state, the first calls refused after a quiet period (breaker
// open, rate limit), a budget exhausted, a state store failing or
// recovering, a pool key paused. Each is one structured line on the
// gateway's logger with event=<kind> (KindBreaker, KindRefused, …).
//
// A storm cannot flood the journal: after a line of one kind and subject
// (a breaker's name, a budget's, a key's hash), the same kind and subject
// is held back for Every; the next line written says how many were held
// back meanwhile (suppressed=N).
//
// Breaker transitions are noticed two ways. Every breaker the gateway
// makes (its Transports', the admin reset's) tells of each change of state
// it makes, once, through breaker.Settings.OnStateChange
// (Log.BreakerChanged): logged at once, from the state it left. And a
// refresh (Log.Start) reads the store's records at a steady pace, for what
// no hook of this process hears: a change another process or host sharing
// the state made (its probe closing the breaker, `sluice breakers reset`),
// and the store falling back to local breakers and back. A record's
// Transitions count tells a change from one already logged, whichever of
// the two saw it first, so none is logged twice; a breaker another process
// changed more than once between two reads is logged once with
// transitions=N.
package events

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/spend"
)

// Every is how long a line of one kind and subject holds back the next
// ones of the same kind and subject.
const Every = 10 * time.Second

// maxSubjects bounds the subjects whose last line is remembered; past it,
// new subjects of a kind share one mark.
const maxSubjects = 1024

// The kinds of operator events: the event attribute of their lines.
const (
	KindBreaker   = "breaker"          // a breaker changed state
	KindRefused   = "refused"          // calls refused: a breaker open, a rate limit's queue full
	KindBudget    = "budget_exhausted" // a budget spent
	KindStore     = "state_store"      // a state store failing, degraded or recovered
	KindKeyPaused = "key_paused"       // a pool key paused or out of quota
)

// Log writes the operator events on a logger, rate-limited. It is safe for
// concurrent use; a nil *Log writes nothing.
type Log struct {
	logger *slog.Logger

	mu    sync.Mutex
	every time.Duration
	marks map[eventKey]*eventMark

	// breakers are the transitions seen; stopRefresh ends the refresh
	// Start began (nil before).
	breakers    breakerWatch
	stopRefresh func()
}

type eventKey struct{ kind, subject string }

// eventMark is when a kind and subject was last written, and how many of
// its lines were held back since.
type eventMark struct {
	at   time.Time
	held int
}

// New returns the operator events of a gateway logging on logger, each
// kind and subject held back for Every after a line.
func New(logger *slog.Logger) *Log {
	ev := &Log{logger: logger, every: Every, marks: make(map[eventKey]*eventMark)}
	ev.breakers = breakerWatch{ev: ev, last: make(map[string]breaker.Record)}
	return ev
}

// SetEvery sets how long a line of one kind and subject holds back the
// next ones (Every unless set); 0 lets every line through.
func (ev *Log) SetEvery(d time.Duration) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.every = d
}

// log writes one event line of kind about subject, unless a line of the
// same kind and subject was written less than ev.every ago: then it is
// only counted, and the next line written says how many were held back.
func (ev *Log) log(level slog.Level, kind, subject, msg string, args ...any) {
	if ev == nil {
		return
	}
	now := time.Now()
	ev.mu.Lock()
	k := eventKey{kind, subject}
	m := ev.marks[k]
	if m == nil {
		if len(ev.marks) >= maxSubjects {
			ev.sweep(now)
		}
		if len(ev.marks) >= maxSubjects {
			k.subject = "" // too many subjects: they share one mark
			m = ev.marks[k]
		}
		if m == nil {
			m = &eventMark{}
			ev.marks[k] = m
		}
	}
	if !m.at.IsZero() && now.Sub(m.at) < ev.every {
		m.held++
		ev.mu.Unlock()
		return
	}
	held := m.held
	m.at, m.held = now, 0
	ev.mu.Unlock()
	args = append([]any{"event", kind}, args...)
	if held > 0 {
		args = append(args, "suppressed", held)
	}
	ev.logger.Log(context.Background(), level, msg, args...)
}

// sweep forgets the marks that no longer hold anything back, with ev.mu
// held. Their held-back counts are 0 or stale: a mark older than ev.every
// would have let its next line through.
func (ev *Log) sweep(now time.Time) {
	for k, m := range ev.marks {
		if now.Sub(m.at) >= ev.every && m.held == 0 {
			delete(ev.marks, k)
		}
	}
}

// Refused logs the first refusals after a quiet period: a.Outcome
// circuit_open (the breaker of policy pol refused it) or rate_limited;
// other outcomes are not refusals and log nothing.
func (ev *Log) Refused(pol *sluice.Policy, a *sluice.Attempt) {
	switch a.Outcome {
	case sluice.OutcomeCircuitOpen:
		name := pol.BreakerName(a.Provider, a.Model)
		ev.log(slog.LevelWarn, KindRefused, "breaker:"+name, "calls refused: the breaker is open",
			"breaker", name, "provider", a.Provider, "model", a.Model, "request_id", a.RequestID)
	case sluice.OutcomeRateLimited:
		ev.log(slog.LevelWarn, KindRefused, "limit:"+a.Provider, "calls refused: a rate limit's queue is full",
			"provider", a.Provider, "model", a.Model, "request_id", a.RequestID)
	}
}

// Budget logs a call refused by a budget: spent (KindBudget), or its
// ledger failing (KindStore).
func (ev *Log) Budget(be *spend.BudgetError) {
	if be.Err != nil {
		ev.log(slog.LevelError, KindStore, "ledger", "the spend ledger failed; calls under its budgets are refused meanwhile",
			"budget", be.Budget, "err", be.Err)
		return
	}
	ev.log(slog.LevelWarn, KindBudget, be.Budget, "budget exhausted; calls are refused until it resets",
		"budget", be.Budget, "remaining_usd", be.Remaining, "resets", be.Resets.UTC().Format(time.RFC3339))
}

// StoreError logs a failure of a state store: part names which one
// (limits, keys, ledger, breakers, answers) and is the line's subject;
// args are more attributes.
func (ev *Log) StoreError(part, msg string, err error, args ...any) {
	ev.log(slog.LevelError, KindStore, part, msg, append([]any{"store", part, "err", err}, args...)...)
}

// KeyPaused logs a pool key of provider, named by its hash, paused until
// until (a rate limit) or, when out, taken out (quota). Its signature is
// keypool.Events.OnPaused's.
func (ev *Log) KeyPaused(provider, hash string, until time.Time, out bool) {
	msg, reason := "pool key paused: the provider's rate limit", "rate_limit"
	if out {
		msg, reason = "pool key out of quota: its calls go to the other keys", "quota"
	}
	ev.log(slog.LevelWarn, KindKeyPaused, provider+"/"+hash, msg,
		"provider", provider, "key", hash, "reason", reason, "until", until.UTC().Format(time.RFC3339))
}

// BreakerChanged is the breaker.Settings.OnStateChange of every breaker
// the gateway makes: a change of state this process made, from from to
// the record to.
func (ev *Log) BreakerChanged(name string, from breaker.State, to breaker.Record) {
	ev.breakers.saw(name, from.String(), to)
}

// breakerWatch logs breaker transitions, from the breakers' hook and from
// the records the refresh reads. It is safe for concurrent use.
type breakerWatch struct {
	ev *Log

	mu   sync.Mutex
	last map[string]breaker.Record // by name: the record last seen
	// degraded is whether the store was last seen degraded.
	degraded bool
}

// saw notes r as the record of breaker name now, and logs the transition
// to it when r's Transitions count is higher than the last record seen's:
// a record older than that (a hook that ran late) is ignored. from is the
// state the transition left, as the hook tells it; "" for a record the
// refresh read, whose transition leaves the last record seen.
func (w *breakerWatch) saw(name, from string, r breaker.Record) {
	w.mu.Lock()
	last, known := w.last[name]
	if known && r.Transitions <= last.Transitions {
		w.mu.Unlock()
		return
	}
	if len(w.last) < maxSubjects || known {
		w.last[name] = r
	}
	w.mu.Unlock()
	n := r.Transitions - last.Transitions
	switch {
	case from != "": // the hook's, which knows the state left
		if !known {
			n = 1
		}
	case known:
		from = last.State.String()
	case r.State == breaker.Closed || r.Transitions == 0:
		return // first read, closed: nothing to tell
	case r.Transitions > 1:
		from = "unknown"
	default:
		from = "closed" // a breaker's first state
	}
	level, msg := slog.LevelWarn, "breaker opened: calls fail fast until a probe succeeds"
	args := []any{"breaker", name, "from", from, "to", r.State.String(), "transitions", n}
	switch r.State {
	case breaker.Open:
		args = append(args, "reason", r.Reason, "until", time.Unix(0, r.Until).UTC().Format(time.RFC3339))
	case breaker.HalfOpen:
		level, msg = slog.LevelInfo, "breaker half_open: one probe goes to the provider"
	case breaker.Closed:
		level, msg = slog.LevelInfo, "breaker closed: calls go to the provider again"
	}
	w.ev.log(level, KindBreaker, name+":"+r.State.String(), msg, args...)
}

// refresh notes whether the store is degraded (it has fallen back to
// breakers in this process; degraded nil: it cannot be), then reads the
// breakers' records and notes each. It is there for what the breakers'
// hook cannot hear: the transitions another process or host sharing the
// store makes (a file or Redis store; another gateway on the same Memory
// in tests), and the store's health. The status page, /sluice/breakers
// and the metrics read the store themselves when asked.
func (w *breakerWatch) refresh(read func() (map[string]breaker.Record, error), degraded func() bool) {
	if degraded != nil {
		now := degraded()
		w.mu.Lock()
		was := w.degraded
		w.degraded = now
		w.mu.Unlock()
		switch {
		case now && !was:
			w.ev.log(slog.LevelError, KindStore, "breakers:degraded",
				"the shared state store cannot be reached or written; breakers count in this process alone meanwhile", "store", "breakers")
		case was && !now:
			w.ev.log(slog.LevelInfo, KindStore, "breakers:recovered", "the shared state store is back; breakers are shared again", "store", "breakers")
		}
	}
	list, err := read()
	if err != nil {
		w.ev.StoreError("breakers", "the breakers' state cannot be read", err)
		return
	}
	for name, r := range list {
		w.saw(name, "", r)
	}
}

// Start refreshes the breakers, at once and every every until Stop: the
// transitions other processes make and the store's health. read returns
// the breakers' records by name (the store's, and those of the names
// known before any call); degraded, nil for a store that cannot fall
// back, whether the shared store has fallen back to breakers in this
// process. Start is called at most once.
func (ev *Log) Start(every time.Duration, read func() (map[string]breaker.Record, error), degraded func() bool) {
	quit, done := make(chan struct{}), make(chan struct{})
	ev.stopRefresh = sync.OnceFunc(func() {
		close(quit)
		<-done
	})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			ev.breakers.refresh(read, degraded)
			select {
			case <-t.C:
			case <-quit:
				return
			}
		}
	}()
}

// Stop ends the refresh Start began and waits for it to end. It may be
// called more than once, and without Start.
func (ev *Log) Stop() {
	if ev.stopRefresh != nil {
		ev.stopRefresh()
	}
}
