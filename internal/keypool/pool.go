package keypool

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/rest"
	"github.com/sluice-llm/sluice/limit"
)

// keyHorizon is the longest a take waits for a slot at a key's learned
// pace: a key whose next slot is further away is passed over for another
// while one is ready, and looked at again then.
const keyHorizon = time.Second

// outUntilReset is how long a quota 429 without Retry-After takes its key
// out: until an operator resets it.
const outUntilReset = 100 * 365 * 24 * time.Hour

// poolKey is one key of a pool.
type poolKey struct {
	env    string
	hash   string
	secret string
	weight int

	// Made once, not at each attempt: its scope (the provider its limits
	// are learned under by the pool's Limiter: "key:<provider>:<hash>",
	// until a reset starts another, see scopeAt), its out key, the key
	// showing its latest pause and the key holding its last reset in the
	// store, and the function that puts it on a request.
	scope, pauseKey, outKey, resetKey string
	set                               func(http.Header)

	epoch atomic.Int64 // its last reset as this process last read it (see scopeAt)
}

// pool is one provider's pool. It is safe for concurrent use.
type pool struct {
	provider string
	dialect  dialect.Dialect // reads the rate-limit headers of its answers
	keys     []*poolKey
	store    limit.Store
	paces    *limit.Limiter // each key's learned limits, per model, over store
	rest     rest.Rest      // the store's, after it failed
	events   Events         // what befalls the keys and the store, told

	mu      sync.Mutex
	current []int // the smooth weighted round robin's running weights

	interactive atomic.Int64 // the interactive calls of this process waiting for a key
}

// newPool reads the pool of provider name from the environment; a
// variable that is empty is an error naming it.
func newPool(name string, p config.Provider, getenv func(string) string, store limit.Store, ev Events) (*pool, error) {
	d, ok := dialect.Lookup(p.Kind)
	if !ok {
		return nil, fmt.Errorf("gateway: providers.%s.kind: %q is no dialect Sluice speaks", name, p.Kind)
	}
	kp := &pool{provider: name, dialect: d, store: store, events: ev, current: make([]int, len(p.APIKeys))}
	kp.paces = &limit.Limiter{Store: store, OnError: func(err error) {
		kp.storeError("pool keys: the state store failed; the keys' paces and pauses hold in this process alone meanwhile", err)
	}}
	for i, k := range p.APIKeys {
		secret := getenv(k.Env)
		if secret == "" {
			return nil, fmt.Errorf("gateway: providers.%s.api_keys_env[%d] names $%s, which is empty (export the key, or drop it from the pool)", name, i, k.Env)
		}
		hash := Hash(secret)
		set := keySetter(d.Client(), secret) // in the header the dialect reads
		scope := "key:" + name + ":" + hash
		kp.keys = append(kp.keys, &poolKey{env: k.Env, hash: hash, secret: secret, weight: max(k.Weight, 1),
			scope: scope, pauseKey: scope + ":paused", outKey: scope + ":out", resetKey: scope + ":reset", set: set})
	}
	return kp, nil
}

// paused tells that key i is paused, or out, until the time given.
func (p *pool) paused(i int, until time.Time, out bool) {
	if p.events.OnPaused != nil {
		p.events.OnPaused(p.provider, p.keys[i].hash, until, out)
	}
}

// storeError tells that the store failed, and msg what holds meanwhile.
func (p *pool) storeError(msg string, err error) {
	if p.events.OnStoreError != nil {
		p.events.OnStoreError(p.provider, msg, err)
	}
}

// keySetter returns the function that puts key on an attempt's header
// where the client c's provider reads it, every other credential dropped.
func keySetter(c dialect.Client, key string) func(http.Header) {
	return func(h http.Header) { c.SetKey(&http.Request{Header: h}, key) }
}

func (p *pool) outKey(i int) string { return p.keys[i].outKey }

// scopeAt returns the scope key i's limits are learned under since its
// reset at epoch (Unix nanoseconds; 0: never reset): a reset starts a new
// scope, so that no pause and no pace learned before it holds the key's
// calls to any model, in any process sharing the store, without knowing
// the models.
func (p *pool) scopeAt(i int, epoch int64) string {
	if epoch == 0 {
		return p.keys[i].scope
	}
	return p.keys[i].scope + "@" + strconv.FormatInt(epoch, 36)
}

// pauseOf returns the key in the store that holds key i's pause for
// model since its reset at epoch: its latest pause (for views) when model
// is "".
func (p *pool) pauseOf(i int, model string, epoch int64) string {
	if model == "" {
		return p.keys[i].pauseKey
	}
	return limit.PauseKey(p.scopeAt(i, epoch), model)
}

// keyState is where a key stands: paused until, out until (in the past or
// zero when not), and its last reset (see scopeAt).
type keyState struct {
	paused, out time.Time
	epoch       int64
}

func (s keyState) ready(now time.Time) bool { return !s.paused.After(now) && !s.out.After(now) }

// states reads every key's state for model's calls from the store (with
// model "", its latest pause of any model). A key whose state cannot be
// read counts as ready: a store that fails must not stop the calls. A
// store that failed rests (package rest), and its keys count as ready
// meanwhile without asking it.
//
// The states are written into buf when it has room (a caller's array on
// its stack spares an allocation per attempt), else into a new slice.
func (p *pool) states(buf []keyState, model string) []keyState {
	out := buf[:0]
	if cap(out) < len(p.keys) {
		out = make([]keyState, 0, len(p.keys))
	}
	out = out[:len(p.keys)]
	clear(out)
	var err error
	for i := 0; i < len(p.keys) && err == nil && !p.rest.Resting(); i++ {
		var reset time.Time
		if reset, err = p.store.PausedUntil(p.keys[i].resetKey); err != nil {
			break
		}
		if !reset.IsZero() {
			out[i].epoch = reset.UnixNano()
			p.keys[i].epoch.Store(out[i].epoch)
		}
		if out[i].paused, err = p.store.PausedUntil(p.pauseOf(i, model, out[i].epoch)); err == nil {
			out[i].out, err = p.store.PausedUntil(p.outKey(i))
		}
	}
	if p.rest.Resting() || err != nil {
		for i := range out { // the last reset this process read
			out[i].epoch = p.keys[i].epoch.Load()
		}
	}
	if err != nil {
		p.rest.Fail(time.Now(), err) // the keys not read count as ready
		p.storeError("pool keys: the state store failed; every key counts as ready meanwhile", err)
	}
	return out
}

// pause pauses key until the time given, in the store unless it rests.
func (p *pool) pause(key string, until time.Time) {
	if p.rest.Resting() {
		return
	}
	if err := p.store.Pause(key, until); err != nil {
		p.rest.Fail(time.Now(), err)
		p.storeError("pool keys: the state store failed; a key's pause holds nowhere meanwhile", err)
	}
}

// learn records an answer of model's with key i, to a call sent at sent:
// a quota 429 takes the key out; anything else the pool's Limiter learns
// for the key and model (a pause, a bucket, a pace), and a pause is shown
// as the key's latest. It reports whether another key is ready now for
// model.
func (p *pool) learn(i int, ans hook.Answer) bool {
	model, status, quota, h, retryAfter := ans.Model, ans.Status, ans.Quota, ans.Header, ans.RetryAfter
	now := time.Now()
	if status == http.StatusTooManyRequests && quota {
		d := outUntilReset
		if retryAfter > 0 {
			d = retryAfter
		}
		p.pause(p.outKey(i), now.Add(d))
		p.paused(i, now.Add(d), true)
	} else {
		ans.Dialect, ans.Provider = p.dialect, p.scopeAt(i, p.keys[i].epoch.Load())
		p.paces.Learn(ans)
		if d := limit.PauseFor(p.dialect, now, status, quota, h, retryAfter); d > 0 {
			p.pause(p.pauseOf(i, "", 0), now.Add(d))
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

// outError is the error of a pool whose keys are all out.
func (p *pool) outError(now time.Time, states []keyState) *OutError {
	e := &OutError{Provider: p.provider}
	for _, s := range states {
		if s.out.Sub(now) < outUntilReset/2 && (e.Resets.IsZero() || s.out.Before(e.Resets)) {
			e.Resets = s.out
		}
	}
	return e
}
