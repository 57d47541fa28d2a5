package keypool

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"
)

// View is one pool key as GET /sluice/keys and `sluice keys` show it:
// never the key, only its short hash and the variable that holds it.
type View struct {
	Provider string `json:"provider"`
	Hash     string `json:"hash"`
	Env      string `json:"env"`
	Weight   int    `json:"weight"`
	// State is ready, paused (a rate limit of a model's calls through
	// it, the latest until Until) or out (of quota: until Until, or until
	// reset when Until is zero).
	State string    `json:"state"`
	Until time.Time `json:"until,omitzero"`
}

// The states of a pool key.
const (
	Ready  = "ready"
	Paused = "paused"
	Out    = "out"
)

// Views lists every pool key, by provider then the pool's order, as it
// stands at now.
func (ps Pools) Views(now time.Time) []View {
	out := []View{}
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		p := ps[name]
		for i, s := range p.states(nil, "") {
			k := p.keys[i]
			v := View{Provider: name, Hash: k.hash, Env: k.env, Weight: k.weight, State: Ready}
			switch {
			case s.out.After(now):
				v.State = Out
				if s.out.Sub(now) < outUntilReset/2 {
					v.Until = s.out.UTC()
				}
			case s.paused.After(now):
				v.State, v.Until = Paused, s.paused.UTC()
			}
			out = append(out, v)
		}
	}
	return out
}

// Reset makes the key whose hash is hash ready again, in every pool that
// holds it, for every process sharing the store: its quota-out ends now,
// and what its answers taught of its limits (each model's pause, bucket
// and pace) is forgotten: its calls start afresh, as a new key's. It
// returns how many keys it reset; none is an *UnknownKeyError.
func (ps Pools) Reset(hash string) (int, error) {
	n := 0
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		p := ps[name]
		for i, k := range p.keys {
			if k.hash != hash {
				continue
			}
			n++
			// A new scope for the key's limits (scopeAt): what was learned
			// of it before, for any model, holds its calls no longer.
			errs = append(errs, p.store.Pause(k.resetKey, time.Now().Add(outUntilReset)),
				p.store.Resume(p.pauseOf(i, "", 0)), p.store.Resume(p.outKey(i)))
		}
	}
	if n == 0 {
		return 0, &UnknownKeyError{Hash: hash}
	}
	return n, errors.Join(errs...)
}

// UnknownKeyError is a reset naming a hash no pool holds.
type UnknownKeyError struct{ Hash string }

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("sluice: no pool key has the hash %q (GET /sluice/keys or sluice keys lists them)", e.Hash)
}
