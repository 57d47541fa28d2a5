package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/rest"
	"github.com/sluice-llm/sluice/limit"
)

// A provider's pool of keys (api_keys_env). Each attempt takes the next
// ready key by smooth weighted round robin; a key is not ready for a model
// while that model's calls through it are paused (a rate-limit 429's
// Retry-After, or rate-limit headers saying a window is spent, as
// limit.PauseFor reads them), and not at all while it is out (a quota
// 429: until the Retry-After it carries, else until an operator resets
// it). What a key's answers teach of its rate limits — its pauses, the
// bucket its headers describe, the pace its 429s teach — is learned and
// paced per key and model by a limit.Limiter of the pool's own, as the
// providers limit each key's calls to each model, so that a 429 on one
// model holds nothing of another and the calls waiting for a key leave
// at its pace, one by one, when its pause ends. All of it lives in the
// limits' Store, so that every process sharing the state sees it at once;
// the round robin's position is each process's own.

// codeQuota is the error of a call whose provider's keys are all out of
// quota. 429, as the providers answer it.
const codeQuota = "insufficient_quota"

// keyHorizon is the longest a take waits for a slot at a key's learned
// pace: a key whose next slot is further away is passed over for another
// while one is ready, and looked at again then.
const keyHorizon = time.Second

// outUntilReset is how long a quota 429 without Retry-After takes its key
// out: until an operator resets it.
const outUntilReset = 100 * 365 * 24 * time.Hour

// KeyHash is the short hash that names a key in the attempt log, the admin
// endpoints and `sluice keys`: the first 8 hex digits of its SHA-256.
func KeyHash(key string) string {
	d := sha256.Sum256([]byte(key))
	return hex.EncodeToString(d[:4])
}

// poolKey is one key of a pool.
type poolKey struct {
	env    string
	hash   string
	secret string
	weight int

	// Made once, not at each attempt: its scope (the provider its limits
	// are learned under by the pool's Limiter: "key:<provider>:<hash>"),
	// its out key and the key showing its latest pause in the store, and
	// the function that puts it on a request.
	scope, pauseKey, outKey string
	set                     func(http.Header)
}

// keyPool is one provider's pool. It is safe for concurrent use.
type keyPool struct {
	provider string
	dialect  dialect.Dialect // reads the rate-limit headers of its answers
	keys     []poolKey
	store    limit.Store
	paces    *limit.Limiter // each key's learned limits, per model, over store
	rest     rest.Rest      // the store's, after it failed
	events   KeyEvents      // what befalls the keys and the store, told

	mu      sync.Mutex
	current []int // the smooth weighted round robin's running weights

	interactive atomic.Int64 // the interactive calls of this process waiting for a key
}

// newKeyPool reads the pool of provider name from the environment; a
// variable that is empty is an error naming it.
func newKeyPool(name string, p config.Provider, getenv func(string) string, store limit.Store, ev KeyEvents) (*keyPool, error) {
	d, ok := dialect.Lookup(p.Kind)
	if !ok {
		return nil, fmt.Errorf("gateway: providers.%s.kind: %q is no dialect Sluice speaks", name, p.Kind)
	}
	kp := &keyPool{provider: name, dialect: d, store: store, events: ev, current: make([]int, len(p.APIKeys))}
	kp.paces = &limit.Limiter{Store: store, OnError: func(err error) {
		kp.storeError("pool keys: the state store failed; the keys' paces and pauses hold in this process alone meanwhile", err)
	}}
	for i, k := range p.APIKeys {
		secret := getenv(k.Env)
		if secret == "" {
			return nil, fmt.Errorf("gateway: providers.%s.api_keys_env[%d] names $%s, which is empty (export the key, or drop it from the pool)", name, i, k.Env)
		}
		hash := KeyHash(secret)
		set := keySetter(d.Client(), secret) // in the header the dialect reads
		scope := "key:" + name + ":" + hash
		kp.keys = append(kp.keys, poolKey{env: k.Env, hash: hash, secret: secret, weight: max(k.Weight, 1),
			scope: scope, pauseKey: scope + ":paused", outKey: scope + ":out", set: set})
	}
	return kp, nil
}

// KeyEvents are what a pool tells of its keys and its store as it runs,
// for the operator's log. A nil func is not called.
type KeyEvents struct {
	// Paused is called when the key of provider's pool whose hash is hash
	// is paused for a rate limit until the time given, or taken out of
	// quota (out) until then.
	Paused func(provider, hash string, until time.Time, out bool)
	// StoreError is called when the state store fails a read or a write
	// of provider's pool; msg says what holds meanwhile.
	StoreError func(provider, msg string, err error)
}

// paused tells that key i is paused, or out, until the time given.
func (p *keyPool) paused(i int, until time.Time, out bool) {
	if p.events.Paused != nil {
		p.events.Paused(p.provider, p.keys[i].hash, until, out)
	}
}

// storeError tells that the store failed, and msg what holds meanwhile.
func (p *keyPool) storeError(msg string, err error) {
	if p.events.StoreError != nil {
		p.events.StoreError(p.provider, msg, err)
	}
}

// keySetter returns the function that puts key on an attempt's header
// where the client c's provider reads it, every other credential dropped.
func keySetter(c dialect.Client, key string) func(http.Header) {
	return func(h http.Header) { c.SetKey(&http.Request{Header: h}, key) }
}

func (p *keyPool) outKey(i int) string { return p.keys[i].outKey }

// pauseOf returns the key in the store that holds key i's pause for
// model: its latest pause (for views) when model is "".
func (p *keyPool) pauseOf(i int, model string) string {
	if model == "" {
		return p.keys[i].pauseKey
	}
	return limit.PauseKey(p.keys[i].scope, model)
}

// keyState is where a key stands: paused until, out until (in the past or
// zero when not).
type keyState struct{ paused, out time.Time }

func (s keyState) ready(now time.Time) bool { return !s.paused.After(now) && !s.out.After(now) }

// states reads every key's state for model's calls from the store (with
// model "", its latest pause of any model). A key whose state cannot be
// read counts as ready: a store that fails must not stop the calls. A
// store that failed rests (package rest), and its keys count as ready
// meanwhile without asking it.
//
// The states are written into buf when it has room (a caller's array on
// its stack spares an allocation per attempt), else into a new slice.
func (p *keyPool) states(buf []keyState, model string) []keyState {
	out := buf[:0]
	if cap(out) < len(p.keys) {
		out = make([]keyState, 0, len(p.keys))
	}
	out = out[:len(p.keys)]
	clear(out)
	if p.rest.Resting() {
		return out
	}
	var err error
	for i := 0; i < len(p.keys) && err == nil; i++ {
		if out[i].paused, err = p.store.PausedUntil(p.pauseOf(i, model)); err == nil {
			out[i].out, err = p.store.PausedUntil(p.outKey(i))
		}
	}
	if err != nil {
		p.rest.Fail(time.Now(), err) // the keys not read count as ready
		p.storeError("pool keys: the state store failed; every key counts as ready meanwhile", err)
	}
	return out
}

// pause pauses key until the time given, in the store unless it rests.
func (p *keyPool) pause(key string, until time.Time) {
	if p.rest.Resting() {
		return
	}
	if err := p.store.Pause(key, until); err != nil {
		p.rest.Fail(time.Now(), err)
		p.storeError("pool keys: the state store failed; a key's pause holds nowhere meanwhile", err)
	}
}

// pick chooses the next ready key at now by smooth weighted round robin
// (each ready key gains its weight, the highest is chosen and pays the
// sum back), so that over any run of calls each ready key takes its share
// spread out, not in bursts. ok is false when no key is ready.
func (p *keyPool) pick(now time.Time, states []keyState) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best, total := -1, 0
	for i, k := range p.keys {
		if !states[i].ready(now) {
			continue
		}
		p.current[i] += k.weight
		total += k.weight
		if best < 0 || p.current[i] > p.current[best] {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	p.current[best] -= total
	return best, true
}

// nextReady returns when the first key paused, not out, is ready again;
// allOut when every key is out.
func nextReady(now time.Time, states []keyState) (at time.Time, allOut bool) {
	allOut = true
	for _, s := range states {
		if s.out.After(now) {
			continue
		}
		allOut = false
		if at.IsZero() || s.paused.Before(at) {
			at = s.paused
		}
	}
	return at, allOut
}

// take returns the index of the key the next attempt to model uses,
// waiting while every key is paused for model, or its next slot at its
// learned pace is more than keyHorizon away, at most maxWait; refused
// with a *limit.Error past it, or a *keysOutError when every key is out.
// The key chosen, its slot at its pace is taken and waited for (at most
// keyHorizon). A wait polls the store at least once a second, to see a
// key reset by an operator. When a key is ready again, the interactive
// calls of this process that waited for one take theirs first: a batch
// call (ctx's priority) looks again every 10 ms while one waits.
func (p *keyPool) take(ctx context.Context, model string, maxWait time.Duration) (int, error) {
	deadline := time.Now().Add(max(maxWait, 0))
	batch, counted := limit.PriorityOf(ctx) == limit.Batch, false
	defer func() {
		if counted {
			p.interactive.Add(-1)
		}
	}()
	var buf [8]keyState
	var busy []time.Time // per key, when its next slot at its pace is, as a take of it was told
	for {
		now := time.Now()
		states := p.states(buf[:], model)
		for i, at := range busy {
			states[i].paused = later(states[i].paused, at)
		}
		if batch && p.interactive.Load() > 0 && now.Before(deadline) && readyAny(now, states) {
			// A key is ready again, and interactive calls of this process
			// that waited for one go first.
			if err := sleepCtx(ctx, min(batchYield, time.Until(deadline))); err != nil {
				return 0, err
			}
			continue
		}
		if i, ok := p.pick(now, states); ok {
			_, done, err := p.paces.Wait(ctx, nil, p.keys[i].scope, model, 0, 0, min(time.Until(deadline), keyHorizon))
			var le *limit.Error
			switch {
			case err == nil:
				done(0)
				return i, nil
			case errors.As(err, &le):
				// Its next slot is further away: another key, or this
				// one when it is nearer.
				if busy == nil {
					busy = make([]time.Time, len(p.keys))
				}
				busy[i] = time.Now().Add(le.Wait)
				continue
			default:
				return 0, err
			}
		}
		if !batch && !counted {
			counted = true
			p.interactive.Add(1)
		}
		at, allOut := nextReady(now, states)
		if allOut {
			return 0, p.outError(now, states)
		}
		if at.After(deadline) {
			return 0, &limit.Error{Key: "keys:" + p.provider, Limit: "pause", Wait: at.Sub(now)}
		}
		// A key's slot within keyHorizon is taken when it is that near.
		wake := at
		if busyAt(busy, at) {
			wake = at.Add(-keyHorizon)
		}
		if err := sleepCtx(ctx, min(wake.Sub(now), time.Second)); err != nil {
			return 0, err
		}
		clear(busy)
	}
}

// busyAt reports whether at is one of busy's times: a key's next slot at
// its pace, not the end of a pause.
func busyAt(busy []time.Time, at time.Time) bool {
	for _, b := range busy {
		if b.Equal(at) {
			return true
		}
	}
	return false
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// learn records an answer of model's with key i, to a call sent at sent:
// a quota 429 takes the key out; anything else the pool's Limiter learns
// for the key and model (a pause, a bucket, a pace), and a pause is shown
// as the key's latest. It reports whether another key is ready now for
// model.
func (p *keyPool) learn(i int, model string, sent time.Time, status int, quota bool, h http.Header, retryAfter time.Duration) bool {
	now := time.Now()
	if status == http.StatusTooManyRequests && quota {
		d := outUntilReset
		if retryAfter > 0 {
			d = retryAfter
		}
		p.pause(p.outKey(i), now.Add(d))
		p.paused(i, now.Add(d), true)
	} else {
		p.paces.Learn(p.dialect, p.keys[i].scope, model, sent, status, quota, h, retryAfter)
		if d := limit.PauseFor(p.dialect, now, status, quota, h, retryAfter); d > 0 {
			p.pause(p.pauseOf(i, ""), now.Add(d))
			p.paused(i, now.Add(d), false)
		}
	}
	if status != http.StatusTooManyRequests {
		return false
	}
	var buf [8]keyState
	states := p.states(buf[:], model)
	for j := range p.keys {
		if j != i && states[j].ready(now) {
			return true
		}
	}
	return false
}

// keysOutError is a call refused because every key of its provider is out
// of quota.
type keysOutError struct {
	provider string
	resets   time.Time // when the first key's quota window resets; zero when none says
}

func (e *keysOutError) Error() string {
	if e.resets.IsZero() {
		return fmt.Sprintf("sluice: every key of provider %s is out of quota; top one up, then reset it (sluice keys reset HASH, or POST /sluice/keys/HASH/reset)", e.provider)
	}
	return fmt.Sprintf("sluice: every key of provider %s is out of quota until %s, or until one is reset (sluice keys reset HASH)", e.provider, e.resets.UTC().Format(time.RFC3339))
}

// Class names the refusal in the attempt log.
func (e *keysOutError) Class() string { return "quota_exhausted" }

// outError is the error of a pool whose keys are all out.
func (p *keyPool) outError(now time.Time, states []keyState) *keysOutError {
	e := &keysOutError{provider: p.provider}
	for _, s := range states {
		if s.out.Sub(now) < outUntilReset/2 && (e.resets.IsZero() || s.out.Before(e.resets)) {
			e.resets = s.out
		}
	}
	return e
}

// KeyPools are the key pools of a config's providers, by provider name:
// the engine's sluice.Keys. Make them with NewKeyPools.
type KeyPools map[string]*keyPool

// secrets returns every key of every pool, to scrub from answers.
func (ps KeyPools) secrets() []string {
	var out []string
	for _, p := range ps {
		for _, k := range p.keys {
			out = append(out, k.secret)
		}
	}
	return out
}

// Take implements sluice.Keys.
func (ps KeyPools) Take(ctx context.Context, provider, model string, maxWait time.Duration) (string, func(http.Header), error) {
	p := ps[provider]
	if p == nil {
		return "", nil, nil
	}
	i, err := p.take(ctx, model, maxWait)
	if err != nil {
		return "", nil, err
	}
	return p.keys[i].hash, p.keys[i].set, nil
}

// Learn implements sluice.Keys.
func (ps KeyPools) Learn(provider, model, id string, sent time.Time, status int, quota bool, h http.Header, retryAfter time.Duration) bool {
	p := ps[provider]
	if p == nil {
		return false
	}
	for i, k := range p.keys {
		if k.hash == id {
			return p.learn(i, model, sent, status, quota, h, retryAfter)
		}
	}
	return false
}
