// Package keypool spreads a provider's calls over a pool of its keys
// (api_keys_env): the engine's sluice.Keys.
//
// Each attempt takes the next ready key by smooth weighted round robin; a
// key is not ready for a model while that model's calls through it are
// paused (a rate-limit 429's Retry-After, or rate-limit headers saying a
// window is spent, as limit.PauseFor reads them), and not at all while it
// is out (a quota 429: until the Retry-After it carries, else until an
// operator resets it). What a key's answers teach of its rate limits —
// its pauses, the bucket its headers describe, the pace its 429s teach —
// is learned and paced per key and model by a limit.Limiter of the pool's
// own, as the providers limit each key's calls to each model, so that a
// 429 on one model holds nothing of another and the calls waiting for a
// key leave at its pace, one by one, when its pause ends. All of it lives
// in the limits' Store, so that every process sharing the state sees it
// at once; the round robin's position is each process's own.
//
// A key is named by its short hash (Hash), never by the key. What befalls
// the keys and the store is told through Events, for the operator's log.
package keypool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
)

// Hash is the short hash that names a key in the attempt log, the admin
// endpoints and `sluice keys`: the first 8 hex digits of its SHA-256.
func Hash(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:4])
}

// Events are what the pools tell of their keys and their store as they
// run, for the operator's log. The zero value tells nothing.
type Events struct {
	// OnPaused, if set, is called when the key of provider's pool whose
	// hash is hash is paused for a rate limit until the time given, or
	// taken out of quota (out) until then.
	OnPaused func(provider, hash string, until time.Time, out bool)
	// OnStoreError, if set, is called when the state store fails a read
	// or a write of provider's pool; msg says, for the operator, what
	// failed and what holds meanwhile.
	OnStoreError func(provider, msg string, err error)
}

// Pools are the key pools of a config's providers, by provider name: the
// engine's sluice.Keys. Make them with New. They are safe for concurrent
// use.
type Pools map[string]*pool

// New reads the key pools of providers from the environment (getenv),
// over the limits' store st, telling ev what befalls them: an empty Pools
// when no provider has a pool. It fails, naming the variable, when one is
// empty.
func New(providers map[string]config.Provider, getenv func(string) string, st limit.Store, ev Events) (Pools, error) {
	out := Pools{}
	for _, name := range slices.Sorted(maps.Keys(providers)) {
		p := providers[name]
		if len(p.APIKeys) == 0 {
			continue
		}
		kp, err := newPool(name, p, getenv, st, ev)
		if err != nil {
			return nil, err
		}
		out[name] = kp
	}
	return out, nil
}

// Secrets returns every key of every pool, to scrub from answers.
func (ps Pools) Secrets() []string {
	var out []string
	for _, p := range ps {
		for _, k := range p.keys {
			out = append(out, k.secret)
		}
	}
	return out
}

// Take implements sluice.Keys.
func (ps Pools) Take(ctx context.Context, ask hook.Ask) (string, func(http.Header), error) {
	p := ps[ask.Provider]
	if p == nil {
		return "", nil, nil
	}
	i, err := p.take(ctx, ask.Model, ask.Caller.Priority, ask.MaxWait)
	if err != nil {
		return "", nil, err
	}
	return p.keys[i].hash, p.keys[i].set, nil
}

// Learn implements sluice.Keys.
func (ps Pools) Learn(ans hook.Answer) bool {
	p := ps[ans.Provider]
	if p == nil {
		return false
	}
	for i, k := range p.keys {
		if k.hash == ans.Key {
			return p.learn(i, ans)
		}
	}
	return false
}

// Limiters returns the Limiter of each pool, by provider name: the paces
// its keys' answers taught, per key and model.
func (ps Pools) Limiters() []*limit.Limiter {
	out := make([]*limit.Limiter, 0, len(ps))
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		out = append(out, ps[name].paces)
	}
	return out
}

// OutError is a call refused because every key of its provider is out of
// quota.
type OutError struct {
	Provider string
	Resets   time.Time // when the first key's quota window resets; zero when none says
}

func (e *OutError) Error() string {
	if e.Resets.IsZero() {
		return fmt.Sprintf("sluice: every key of provider %s is out of quota; top one up, then reset it (sluice keys reset HASH, or POST /sluice/keys/HASH/reset)", e.Provider)
	}
	return fmt.Sprintf("sluice: every key of provider %s is out of quota until %s, or until one is reset (sluice keys reset HASH)", e.Provider, e.Resets.UTC().Format(time.RFC3339))
}

// Class names the refusal in the attempt log.
func (e *OutError) Class() string { return "quota_exhausted" }
