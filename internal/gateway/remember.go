package gateway

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/internal/events"
)

// answers is the gateway's side of Idempotency-Key: the store of kept
// answers and what it counts.
type answers struct {
	store     idempotency.Store
	replays   *prometheus.CounterVec // by route
	saved     prometheus.Counter     // USD the replays did not spend
	conflicts *prometheus.CounterVec // by reason: in_progress, reused
	errors    prometheus.Counter     // the store failed: the call ran un-deduplicated
	notKept   *prometheus.CounterVec // by reason: too_large, mark_lost
}

func newAnswers(store idempotency.Store, reg *prometheus.Registry) *answers {
	a := &answers{
		store: store,
		replays: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_idempotent_replays_total", Help: "Calls answered from the answer kept for their Idempotency-Key, without an upstream call.",
		}, []string{"route"}),
		saved: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_idempotent_replays_usd_total", Help: "USD the replayed answers cost when first made: what the replays did not spend.",
		}),
		conflicts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_idempotency_conflicts_total", Help: "Calls refused for their Idempotency-Key: in_progress (409, the first is still in flight) or reused (422, another request).",
		}, []string{"reason"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sluice_idempotency_store_errors_total", Help: "Calls with an Idempotency-Key that ran un-deduplicated because the answer store failed.",
		}),
		notKept: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sluice_idempotency_not_kept_total", Help: "Whole 2xx answers not kept: too_large (over idempotency.max_answer), credential (the body holds a credential the request carried) or mark_lost (the call outlived its mark's lease).",
		}, []string{"reason"}),
	}
	reg.MustRegister(a.replays, a.saved, a.conflicts, a.errors, a.notKept)
	if s, ok := store.(interface{ Bytes() int64 }); ok {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_idempotency_store_bytes", Help: "Bytes of the answers kept.",
		}, func() float64 { return float64(s.Bytes()) }))
	}
	return a
}

// observe counts what the attempt line a tells of its call's
// Idempotency-Key (sluice.Attempt.Idempotency): an answer not kept, or
// the answer store's failure, which is an operator event too.
func (a *answers) observe(line *sluice.Attempt, ev *events.Log) {
	switch line.Idempotency {
	case "", sluice.IdempotencyKept:
	case sluice.IdempotencyStoreError:
		a.errors.Inc()
		ev.StoreError("answers", "the answer store failed: the call ran un-deduplicated, or its answer was not kept (a duplicate may be billed again)",
			errAnswerStore, "request_id", line.RequestID)
	default:
		a.notKept.WithLabelValues(line.Idempotency).Inc()
	}
}

// errAnswerStore is the error an answer store's failure is logged with:
// the engine says that the store failed, not how.
var errAnswerStore = errors.New("the answer store failed (the state store's own errors tell how)")

// replayed counts a replay of route: what its first call cost is what it
// did not spend.
func (a *answers) replayed(route string, line *sluice.Attempt) {
	a.replays.WithLabelValues(route).Inc()
	a.saved.Add(line.SavedUSD)
}

// conflict answers a call the engine refused for its Idempotency-Key: a
// bad key (400), a key reused for another request (422), a duplicate of a
// call still in flight once the wait for it ended (409). ok is false for
// any other error.
func (a *answers) conflict(w http.ResponseWriter, d dialect.Dialect, err error) (ok bool) {
	var busy *sluice.InProgressError
	switch {
	case errors.Is(err, idempotency.ErrInvalidKey):
		writeError(w, d, http.StatusBadRequest, codeBadRequest, err.Error())
	case errors.Is(err, sluice.ErrIdempotencyKeyReused):
		a.conflicts.WithLabelValues("reused").Inc()
		writeError(w, d, http.StatusUnprocessableEntity, codeKeyReused,
			"sluice: this Idempotency-Key was sent before with another request (method, path or body); send a new key for a new request")
	case errors.As(err, &busy):
		a.conflicts.WithLabelValues("in_progress").Inc()
		w.Header().Set("Retry-After", retryAfterSeconds(busy.Until, time.Now()))
		writeError(w, d, http.StatusConflict, codeKeyInProgress,
			fmt.Sprintf("sluice: a call with this Idempotency-Key is still in flight (until %s at most); retry after it", busy.Until.UTC().Format(time.RFC3339)))
	default:
		return false
	}
	return true
}
