// Package limitstats is what an operator sees of the gateway's rate
// limits (package limit): the view GET /sluice/limits answers and the
// status page shows (Read), and the sluice_ratelimit_* Prometheus metrics
// (NewMetrics). It reads Limiters and attempt lines, and changes neither.
package limitstats

import (
	"slices"
	"time"

	"github.com/sluice-llm/sluice/limit"
)

// View is what GET /sluice/limits answers, and status.json shows.
type View struct {
	Limits  []Limit         `json:"limits"`
	Buckets []Bucket        `json:"buckets"`
	Queued  int             `json:"queued"`
	Stats   map[string]Stat `json:"stats"`
	// Priorities are this process's calls per priority (interactive,
	// batch): waiting now, admitted, refused, and their time waited.
	Priorities map[string]Priority `json:"priorities"`
}

// Limit is one configured limit: one of limits.rates, or a provider's
// max_concurrent.
type Limit struct {
	Name              string  `json:"name"`
	Provider          string  `json:"provider,omitempty"`
	Scope             string  `json:"scope"`
	RequestsPerMinute int64   `json:"requests_per_minute,omitempty"`
	TokensPerMinute   int64   `json:"tokens_per_minute,omitempty"`
	Concurrent        int     `json:"concurrent,omitempty"`
	Reserve           float64 `json:"reserve,omitempty"` // the share batch calls may never take
}

// Bucket is one bucket, pause or concurrency key of the store.
type Bucket struct {
	Key         string     `json:"key"`
	FreeAt      *time.Time `json:"free_at,omitempty"`
	PausedUntil *time.Time `json:"paused_until,omitempty"`
	Queued      int        `json:"queued"`
	// QueuedBatch is how many of Queued are batch calls.
	QueuedBatch int `json:"queued_batch"`
	// Waiting is, for a concurrency key, the calls waiting for one of its
	// slots in every process sharing the state, per priority.
	Waiting map[string]int64 `json:"waiting,omitempty"`
	// InFlight is, for a concurrency key (…:concurrent), the slots taken
	// in every process sharing the state; 0 for a bucket or a pause.
	InFlight int64 `json:"in_flight"`
	// LearnedPerSecond is, for a pause, the pace its calls are held to
	// (limit.Limiter.PacedOf), SetBy what set it ("headers", "429" or
	// "limit"), SetAt when (none for a configured limit).
	LearnedPerSecond float64    `json:"learned_per_second,omitempty"`
	SetBy            string     `json:"set_by,omitempty"`
	SetAt            *time.Time `json:"set_at,omitempty"`
}

// Stat is this process's calls under one limit.
type Stat struct {
	Queued int `json:"queued"`
	// InFlight is the slots of a concurrent limit this process's calls
	// hold now (every provider's, for max_concurrent).
	InFlight int    `json:"in_flight"`
	Admitted uint64 `json:"admitted"`
	Refused  uint64 `json:"refused"`
	Paused   uint64 `json:"paused,omitempty"`
}

// Priority is this process's calls of one priority.
type Priority struct {
	Queued   int     `json:"queued"`
	Admitted uint64  `json:"admitted"`
	Refused  uint64  `json:"refused"`
	WaitedMS float64 `json:"waited_ms"` // of the admitted, summed
}

// Read returns the view of l, the Limiter of the gateway's limits: its
// limits (limits.rates, then each provider's max_concurrent), the buckets
// and pauses in the store with when each is next free, and this process's
// queue and counts. The buckets of others (the key pools' Limiters, which
// learn paces of their own) are listed after l's. It fails when the store
// cannot be read.
func Read(l *limit.Limiter, others ...*limit.Limiter) (View, error) {
	var buckets []limit.Bucket
	var of []*limit.Limiter // the Limiter each bucket is of
	for _, p := range append([]*limit.Limiter{l}, others...) {
		bs, err := p.Buckets()
		if err != nil {
			return View{}, err
		}
		buckets = append(buckets, bs...)
		of = append(of, slices.Repeat([]*limit.Limiter{p}, len(bs))...)
	}
	v := View{Limits: []Limit{}, Buckets: []Bucket{}, Queued: l.Queued(), Stats: map[string]Stat{},
		Priorities: priorityViews(l)}
	for _, lim := range l.Limits {
		v.Limits = append(v.Limits, Limit{Name: lim.Name, Provider: lim.Provider, Scope: lim.Scope,
			RequestsPerMinute: perMinute(lim.Requests), TokensPerMinute: perMinute(lim.Tokens), Concurrent: lim.Concurrent, Reserve: lim.Reserve})
	}
	for i, b := range buckets {
		bv := Bucket{Key: b.Key, Queued: b.Queued, QueuedBatch: b.QueuedBatch, Waiting: waitingView(b), InFlight: b.InFlight}
		if !b.FreeAt.IsZero() {
			t := b.FreeAt.UTC()
			bv.FreeAt = &t
		}
		if !b.PausedUntil.IsZero() {
			t := b.PausedUntil.UTC()
			bv.PausedUntil = &t
		}
		if p := of[i].PacedOf(b); p.PerSecond > 0 {
			bv.LearnedPerSecond, bv.SetBy = p.PerSecond, p.SetBy
			if !p.At.IsZero() {
				t := p.At.UTC()
				bv.SetAt = &t
			}
		}
		v.Buckets = append(v.Buckets, bv)
	}
	for name, s := range l.Stats() {
		v.Stats[name] = Stat{Queued: s.Queued, InFlight: s.InFlight, Admitted: s.Admitted, Refused: s.Refused, Paused: s.Paused}
	}
	return v, nil
}

// perMinute is a rate in units per minute, 0 when it limits nothing.
func perMinute(r limit.Rate) int64 {
	if r.Limit == 0 || r.Per <= 0 {
		return 0
	}
	return int64(float64(r.Limit) * float64(time.Minute) / float64(r.Per))
}

// priorityViews returns the views of l's priorities.
func priorityViews(l *limit.Limiter) map[string]Priority {
	out := make(map[string]Priority, len(priorities))
	for p, s := range l.PriorityStats() {
		out[string(p)] = Priority{Queued: s.Queued, Admitted: s.Admitted, Refused: s.Refused,
			WaitedMS: float64(s.Waited) / float64(time.Millisecond)}
	}
	return out
}

// waitingView returns a concurrency key's waiting calls per priority, in
// every process sharing the state; nil for a bucket or a pause.
func waitingView(b limit.Bucket) map[string]int64 {
	if b.Waiting == nil {
		return nil
	}
	out := make(map[string]int64, len(b.Waiting))
	for p, n := range b.Waiting {
		out[string(p)] = n
	}
	return out
}
