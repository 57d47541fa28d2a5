package gateway

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/events"
	"github.com/sluice-llm/sluice/internal/keypool"
)

// The providers' pools of keys (api_keys_env) are package keypool's; here
// are what the gateway shows of them: the admin endpoint, the answer when
// every key is out, the metric, and their events in the operator's log.

// codeQuota is the error of a call whose provider's keys are all out of
// quota. 429, as the providers answer it.
const codeQuota = "insufficient_quota"

// keyEvents are the pools' events, logged as ev's operator events.
func keyEvents(ev *events.Log) keypool.Events {
	return keypool.Events{OnPaused: ev.KeyPaused, OnStoreError: func(provider, msg string, err error) {
		ev.StoreError("keys", msg, err, "provider", provider)
	}}
}

// serveKeys answers GET /sluice/keys and POST /sluice/keys/{hash}/reset.
func (g *Gateway) serveKeys(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/sluice/keys" {
		if r.Method != http.MethodGet {
			writeError(w, config0, http.StatusMethodNotAllowed, codeMethodNotAllowed, "sluice: use GET")
			return
		}
		writeJSON(w, map[string]any{"keys": g.pools.Views(time.Now())})
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
	var unknown *keypool.UnknownKeyError
	if _, err := g.pools.Reset(hash); errors.As(err, &unknown) {
		writeError(w, config0, http.StatusNotFound, codeNotFound, err.Error())
		return
	} else if err != nil {
		writeStateFailed(w, err)
		return
	}
	writeJSON(w, map[string]string{"hash": hash, "state": keypool.Ready})
}

// answerKeysOut answers a call whose provider's keys are all out of
// quota, in the provider's shape, as the provider itself would: 429
// insufficient_quota.
func answerKeysOut(w http.ResponseWriter, d dialect.Dialect, e *keypool.OutError) {
	if !e.Resets.IsZero() {
		w.Header().Set("Retry-After", retryAfterSeconds(e.Resets, time.Now()))
	}
	writeError(w, d, http.StatusTooManyRequests, codeQuota, e.Error())
}

// keysCollector reports, when scraped, how many keys of each pool of the
// current config are paused and out.
type keysCollector struct {
	pools func() keypool.Pools
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
		for _, s := range []string{keypool.Ready, keypool.Paused, keypool.Out} {
			counts[[2]string{name, s}] = 0
		}
	}
	for _, v := range ps.Views(time.Now()) {
		counts[[2]string{v.Provider, v.State}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(keysStateDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
}
