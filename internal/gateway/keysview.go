package gateway

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
)

// KeyView is one pool key as GET /sluice/keys and `sluice keys` show it:
// never the key, only its short hash and the variable that holds it.
type KeyView struct {
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
	KeyReady  = "ready"
	KeyPaused = "paused"
	KeyOut    = "out"
)

// NewKeyPools reads the key pools of cfg's providers from the environment, over
// the limits' store st, for KeyViews and ResetKey (an empty KeyPools when no provider has a pool). It fails, naming the
// variable, when one is empty.
func NewKeyPools(cfg *config.Config, getenv func(string) string, st limit.Store, ev KeyEvents) (KeyPools, error) {
	out := KeyPools{}
	for _, name := range slices.Sorted(maps.Keys(cfg.Providers)) {
		p := cfg.Providers[name]
		if len(p.APIKeys) == 0 {
			continue
		}
		kp, err := newKeyPool(name, p, getenv, st, ev)
		if err != nil {
			return nil, err
		}
		out[name] = kp
	}
	return out, nil
}

// KeyViews lists every pool key, by provider then the pool's order, as it
// stands at now.
func KeyViews(ps KeyPools, now time.Time) []KeyView {
	out := []KeyView{}
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		p := ps[name]
		for i, s := range p.states(nil, "") {
			k := p.keys[i]
			v := KeyView{Provider: name, Hash: k.hash, Env: k.env, Weight: k.weight, State: KeyReady}
			switch {
			case s.out.After(now):
				v.State = KeyOut
				if s.out.Sub(now) < outUntilReset/2 {
					v.Until = s.out.UTC()
				}
			case s.paused.After(now):
				v.State, v.Until = KeyPaused, s.paused.UTC()
			}
			out = append(out, v)
		}
	}
	return out
}

// ResetKey makes the key whose hash is hash ready again, in every pool
// that holds it, for every process sharing the store: its quota-out and
// the pause it shows end now. (A model's rate-limit pause through it still
// ends when the provider said: no reset makes the provider take calls
// sooner.) It returns how many keys it reset; none is an
// *UnknownKeyError.
func ResetKey(ps KeyPools, hash string) (int, error) {
	n := 0
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(ps)) {
		p := ps[name]
		for i, k := range p.keys {
			if k.hash != hash {
				continue
			}
			n++
			errs = append(errs, p.store.Resume(p.pauseOf(i, "")), p.store.Resume(p.outKey(i)))
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

// serveKeys answers GET /sluice/keys and POST /sluice/keys/{hash}/reset.
func (g *Gateway) serveKeys(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/sluice/keys" {
		if r.Method != http.MethodGet {
			writeError(w, config0, http.StatusMethodNotAllowed, codeMethodNotAllowed, "sluice: use GET")
			return
		}
		writeJSON(w, map[string]any{"keys": KeyViews(g.pools, time.Now())})
		return
	}
	hash, ok := strings.CutSuffix(strings.TrimPrefix(p, "/sluice/keys/"), "/reset")
	if !ok || hash == "" || strings.Contains(hash, "/") {
		writeError(w, config0, http.StatusNotFound, codeNotFound, "sluice: unknown admin endpoint (try GET /sluice/keys or POST /sluice/keys/HASH/reset)")
		return
	}
	if r.Method != http.MethodPost {
		writeError(w, config0, http.StatusMethodNotAllowed, codeMethodNotAllowed, "sluice: use POST")
		return
	}
	var unknown *UnknownKeyError
	if _, err := ResetKey(g.pools, hash); errors.As(err, &unknown) {
		writeError(w, config0, http.StatusNotFound, codeNotFound, err.Error())
		return
	} else if err != nil {
		writeStateFailed(w, err)
		return
	}
	writeJSON(w, map[string]string{"hash": hash, "state": KeyReady})
}

// answerKeysOut answers a call whose provider's keys are all out of
// quota, in the provider's shape, as the provider itself would: 429
// insufficient_quota.
func answerKeysOut(w http.ResponseWriter, d dialect.Dialect, e *keysOutError) {
	if !e.resets.IsZero() {
		w.Header().Set("Retry-After", retryAfterSeconds(e.resets, time.Now()))
	}
	writeError(w, d, http.StatusTooManyRequests, codeQuota, e.Error())
}

// keyEvents are the pools' events, logged as ev's operator events.
func keyEvents(ev *operatorEvents) KeyEvents {
	return KeyEvents{Paused: ev.keyPaused, StoreError: func(provider, msg string, err error) {
		ev.storeError("keys", msg, err, "provider", provider)
	}}
}

// keysCollector reports, when scraped, how many keys of each pool of the
// current config are paused and out.
type keysCollector struct {
	pools func() KeyPools
}

var keysStateDesc = prometheus.NewDesc("sluice_keys",
	"Keys of a provider's pool (api_keys_env) by state: ready, paused (rate limit) or out (quota).", []string{"provider", "state"}, nil)

func (c *keysCollector) Describe(ch chan<- *prometheus.Desc) { ch <- keysStateDesc }

func (c *keysCollector) Collect(ch chan<- prometheus.Metric) {
	ps := c.pools()
	if len(ps) == 0 {
		return
	}
	counts := map[[2]string]int{}
	for name := range ps {
		for _, s := range []string{KeyReady, KeyPaused, KeyOut} {
			counts[[2]string{name, s}] = 0
		}
	}
	for _, v := range KeyViews(ps, time.Now()) {
		counts[[2]string{v.Provider, v.State}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(keysStateDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}
