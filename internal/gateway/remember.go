package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/internal/credential"
)

// leaseFor is how long a call's in-flight mark lasts: its policy's total,
// plus as much again (at most 10 s) for the relay of its last bytes and
// the keeping of its answer. A mark whose holder was killed is taken by
// the next duplicate once it has passed.
func leaseFor(total time.Duration) time.Duration {
	return total + min(total, 10*time.Second)
}

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

// remembered is a call that runs under an Idempotency-Key: its mark, to
// end with the answer kept or with nothing.
type remembered struct {
	a       *answers
	mark    idempotency.Mark
	ttl     time.Duration
	secrets credential.Secrets // the request's credentials: an answer holding one is not kept
	kept    bool
	judged  atomic.Pointer[sluice.Judgment] // how the call ended, once its answer is done (ended)
}

// ended is the call's Body.OnEnd: the engine tells it how the call ended
// once the answer relayed is done, before keep asks.
func (rm *remembered) ended(j sluice.Judgment) { rm.judged.Store(&j) }

// remember handles a request's Idempotency-Key before its call: it answers
// a bad key (400), a key reused for another request (422), a duplicate of
// a call still in flight once the wait for it ends (409), and a duplicate
// of a call whose answer is kept (the replay). Else it returns the call's
// mark (nil when the store failed: the call runs un-deduplicated), and
// done false.
func (g *Gateway) remember(w http.ResponseWriter, r *http.Request, rt *route, pol *sluice.Policy, rest, key, caller string, body []byte, id string) (rm *remembered, done bool) {
	d := rt.provider.d
	if err := idempotency.CheckValue(key); err != nil {
		writeError(w, d, http.StatusBadRequest, codeBadRequest, "sluice: Idempotency-Key: "+err.Error())
		return nil, true
	}
	a := g.answers
	sid := idempotency.Key{Scope: rt.prefix, Caller: caller, Value: key}.ID()
	fp := idempotency.Fingerprint(r.Method, rest, r.URL.Query(), body)
	lease := leaseFor(pol.Timeout.Total)
	res, err := a.store.Begin(sid, fp, lease, time.Now())
	if err == nil && res.Verdict == idempotency.InFlight {
		res, err = idempotency.Wait(r.Context(), a.store, sid, fp, lease, pol.Timeout.Total)
	}
	if err != nil {
		if r.Context().Err() != nil {
			return nil, true // the client left while it waited
		}
		a.errors.Inc()
		g.events.storeError("answers", "the answer store failed: the call runs un-deduplicated (a duplicate may be billed again)", err)
		return nil, false
	}
	switch res.Verdict {
	case idempotency.Replay:
		g.replay(w, r, rt, pol, rest, id, res.Answer, rt.provider.d.Request(rest, body).Model)
		return nil, true
	case idempotency.Conflict:
		a.conflicts.WithLabelValues("reused").Inc()
		writeError(w, d, http.StatusUnprocessableEntity, codeKeyReused,
			"sluice: this Idempotency-Key was sent before with another request (method, path or body); send a new key for a new request")
		return nil, true
	case idempotency.InFlight:
		a.conflicts.WithLabelValues("in_progress").Inc()
		w.Header().Set("Retry-After", retryAfterSeconds(res.Until, time.Now()))
		writeError(w, d, http.StatusConflict, codeKeyInProgress,
			fmt.Sprintf("sluice: a call with this Idempotency-Key is still in flight (until %s at most); retry after it", res.Until.UTC().Format(time.RFC3339)))
		return nil, true
	}
	return &remembered{a: a, mark: res.Mark, ttl: g.cfg.Idempotency.TTL, secrets: callerNames.Secrets(r.Header, r.URL)}, false
}

// keep keeps the answer resp relayed, when it is whole: a 2xx whose body
// was read to its end (a stream whose terminal event came), captured in c
// without passing max_answer. Anything else keeps nothing.
func (rm *remembered) keep(resp *http.Response, c *capture, id string) {
	if rm == nil || resp == nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return
	}
	j := rm.judged.Load()
	if j == nil || j.Outcome != sluice.OutcomeOK || !c.whole {
		return
	}
	if c.tooLarge {
		rm.a.notKept.WithLabelValues("too_large").Inc()
		return
	}
	if rm.secrets.In(c.body) {
		rm.a.notKept.WithLabelValues("credential").Inc()
		return
	}
	ans := &idempotency.Answer{Status: resp.StatusCode, Header: idempotency.ContentHeaders(resp.Header),
		Body: c.body, Stream: c.stream, RequestID: id, CostUSD: j.CostUSD}
	switch err := rm.a.store.Keep(rm.mark, ans, rm.ttl, time.Now()); {
	case err == nil:
		rm.kept = true
	case errors.Is(err, idempotency.ErrTooLarge):
		rm.a.notKept.WithLabelValues("too_large").Inc()
	case errors.Is(err, idempotency.ErrMarkLost):
		rm.a.notKept.WithLabelValues("mark_lost").Inc()
	default:
		rm.a.errors.Inc()
	}
}

// end clears the mark of a call that kept nothing, so that a duplicate
// runs it again; a kept answer's mark is cleared already.
func (rm *remembered) end() {
	if rm != nil && !rm.kept {
		rm.a.store.Release(rm.mark)
	}
}

// callContext is the context a call's upstream request is made under:
// the client's, or, for a call with a kept mark whose client may leave
// (idempotency.finish_on_disconnect), one the client's leaving does not
// cancel, so the call is finished and its answer kept. Its policy's total
// still bounds it, and the gateway's abort still ends it.
func (g *Gateway) callContext(r *http.Request, rm *remembered) context.Context {
	if rm != nil && g.cfg.Idempotency.FinishOnDisconnect {
		return context.WithoutCancel(r.Context())
	}
	return r.Context()
}

// replay answers a duplicate with the answer kept for its key: the same
// status and body byte for byte (a stream: the same events, in order),
// marked Idempotent-Replayed, naming the call that answered first. It
// leaves one line in the attempt log, outcome replayed, at no cost.
func (g *Gateway) replay(w http.ResponseWriter, r *http.Request, rt *route, pol *sluice.Policy, rest, id string, ans *idempotency.Answer, model string) {
	h := w.Header()
	for k, v := range ans.Header {
		h[k] = v
	}
	h.Set("Idempotent-Replayed", "true")
	h.Set("Sluice-Replay-Of", ans.RequestID)
	h.Set("Sluice-Attempts", "0")
	h.Set("X-Should-Retry", "false")
	if !ans.Stream {
		h.Set("Content-Length", strconv.Itoa(len(ans.Body)))
	}
	w.WriteHeader(ans.Status)
	w.Write(ans.Body)
	line := sluice.Attempt{TS: time.Now(), RequestID: id, Attempt: 1, Policy: pol.Name, Provider: rt.provider.name,
		Model: model, Method: r.Method, Path: rest, Status: ans.Status, Outcome: sluice.OutcomeReplayed,
		Breaker: "closed", BytesIn: int64(len(ans.Body)), Stream: ans.Stream, ReplayOf: ans.RequestID}
	g.log.Write(&line)
	g.history.observeReplay(&line, ans.CostUSD)
	g.answers.replays.WithLabelValues(rt.prefix).Inc()
	g.answers.saved.Add(ans.CostUSD)
}

// capture is what the relay of a call under an Idempotency-Key keeps of
// the answer the client got, to keep it.
type capture struct {
	max      int64  // idempotency.max_answer
	finish   bool   // relay to the end when the client leaves
	body     []byte // the bytes relayed, up to max
	tooLarge bool   // the answer passed max: body is not all of it
	stream   bool
	whole    bool // the body was read to its end without an error
}

// add notes bytes relayed to the client.
func (c *capture) add(p []byte) {
	if c.tooLarge {
		return
	}
	if int64(len(c.body)+len(p)) > c.max {
		c.tooLarge, c.body = true, nil
		return
	}
	c.body = append(c.body, p...)
}
