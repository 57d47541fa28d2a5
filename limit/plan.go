package limit

import (
	"cmp"
	"maps"
	"sync"
	"sync/atomic"
)

// plan is what the Limits say of one provider's calls, worked out once:
// the limits that cover them, each with its keys when its scope does not
// depend on the call (provider, all), and how many buckets and gates a
// call gets.
type plan struct {
	limits []planned
	nb, ng int
	nr     int    // buckets whose limit reserves a share from Batch calls
	err    error  // a Limit that does not Check
	shared string // the provider's pause key when its limits are shared by its models, else ""

	// ceiling is the lowest configured request rate covering the
	// provider's calls, per second (0: none): a learned pace is never
	// cut from above it (PaceEvent.Ceiling).
	ceiling float64

	pauses sync.Map // model → its pause key, for up to maxPlans models
	npause atomic.Int64
}

// planned is one limit of a plan.
type planned struct {
	lim   *Limit
	fixed bool   // the keys below are the call's: scope provider or all
	base  string // "limit:<name>:<scope>" when fixed, else "limit:<name>:"
	keys  [7]string
}

// bucket and gate key suffixes.
const (
	requestsKey = ":requests"
	tokensKey   = ":tokens"
	inFlightKey = ":concurrent"
)

// maxPlans bounds how many providers' plans a Limiter keeps; past it, a
// call's plan is worked out again at each call.
const maxPlans = 1024

// plan returns provider's plan.
func (l *Limiter) plan(provider string) *plan {
	if m := l.plans.Load(); m != nil {
		if p := (*m)[provider]; p != nil {
			return p
		}
	}
	p := l.makePlan(provider)
	l.plansMu.Lock()
	defer l.plansMu.Unlock()
	var next map[string]*plan
	if m := l.plans.Load(); m != nil {
		if len(*m) >= maxPlans {
			return p
		}
		next = maps.Clone(*m)
	} else {
		next = make(map[string]*plan)
	}
	next[provider] = p
	l.plans.Store(&next)
	return p
}

// makePlan works provider's plan out.
func (l *Limiter) makePlan(provider string) *plan {
	p := &plan{}
	if l.SharedLimits != nil && l.SharedLimits(provider) {
		p.shared = SharedPauseKey(provider)
	}
	for i := range l.Limits {
		lim := &l.Limits[i]
		if lim.Provider != "" && lim.Provider != provider {
			continue
		}
		if err := lim.Check(); err != nil {
			return &plan{err: err, shared: p.shared}
		}
		pl := planned{lim: lim, base: "limit:" + lim.Name + ":"}
		switch lim.Scope {
		case "", "provider":
			pl.fixed, pl.base = true, pl.base+provider
		case "all":
			pl.fixed, pl.base = true, pl.base+"all"
		}
		if pl.fixed {
			pl.keys = limitKeys(pl.base)
		}
		if !lim.Requests.IsZero() {
			p.nb++
			if c := lim.Requests.perSecond(); p.ceiling == 0 || c < p.ceiling {
				p.ceiling = c
			}
		}
		if !lim.Tokens.IsZero() {
			p.nb++
		}
		if lim.Reserve > 0 {
			p.nr += 2
		}
		if lim.Concurrent > 0 {
			p.ng++
		}
		p.limits = append(p.limits, pl)
	}
	return p
}

// limitKeys returns the keys of a limit's base ("limit:<name>:<scope>"):
// its requests and tokens buckets, its concurrency key, the buckets of the
// shares of requests and tokens left to Batch calls, and the counts of the
// Interactive and Batch calls waiting for its in-flight slots.
func limitKeys(base string) [7]string {
	return [7]string{base + requestsKey, base + tokensKey, base + inFlightKey, base + requestsKey + batchKey, base + tokensKey + batchKey,
		waitingKey(base+inFlightKey, Interactive), waitingKey(base+inFlightKey, Batch)}
}

// pauseKey returns the key of the pause and learned bucket of a call to
// the plan's provider's model: PauseKey(provider, model), or
// SharedPauseKey(provider) when the provider's limits are shared by its
// models.
func (p *plan) pauseKey(provider, model string) string {
	if p.shared != "" {
		return p.shared
	}
	if k, ok := p.pauses.Load(model); ok {
		return k.(string)
	}
	k := PauseKey(provider, model)
	if p.npause.Add(1) <= maxPlans {
		p.pauses.Store(model, k)
	}
	return k
}

// buckets returns the buckets and the concurrency gates of a call under
// p, provider's plan.
func (l *Limiter) buckets(p *plan, caller, provider, model string, tokens int64) ([]bucket, []gate, error) {
	if p.err != nil {
		return nil, nil, p.err
	}
	var bs []bucket
	var gs []gate
	if p.nb > 0 {
		bs = make([]bucket, 0, p.nb+p.nr) // room for withReserves
	}
	if p.ng > 0 {
		gs = make([]gate, 0, p.ng)
	}
	for _, pl := range p.limits {
		lim := pl.lim
		keys := pl.keys
		if !pl.fixed {
			scope := provider + "/" + model
			if lim.Scope == "key" {
				scope = cmp.Or(caller, "-") // calls with no caller share one bucket
			}
			keys = limitKeys(pl.base + scope)
		}
		if !lim.Requests.IsZero() {
			bs = append(bs, bucket{key: keys[0], limit: lim.Name, rate: lim.Requests, cost: 1, reserve: lim.Reserve, batchKey: keys[3]})
		}
		if !lim.Tokens.IsZero() {
			bs = append(bs, bucket{key: keys[1], limit: lim.Name, rate: lim.Tokens, cost: tokens, tokens: true, reserve: lim.Reserve, batchKey: keys[4]})
		}
		if lim.Concurrent > 0 {
			n := int64(lim.Concurrent)
			gs = append(gs, gate{key: keys[2], limit: lim.Name, n: n, reserved: reservedSlots(n, lim.Reserve), waiting: [2]string{keys[5], keys[6]}})
		}
	}
	return bs, gs, nil
}
