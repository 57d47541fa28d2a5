package gateway

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/sluice-llm/sluice/internal/config"
)

// RestartError is Reload's error when the new config changes an option that
// is read only at start: listen, state (backend, dir, url, redis), log.attempts,
// limits.read_header_timeout and tracing.
type RestartError struct {
	Key      string // the option, as written in the config
	Old, New string
}

func (e *RestartError) Error() string {
	return fmt.Sprintf("gateway: %s changed from %q to %q, which takes a restart; put it back to reload the rest, or restart sluice serve", e.Key, e.Old, e.New)
}

// Reload switches the gateway to the config that load returns, for the
// requests that arrive from now on; the calls in flight finish on the
// config they started with. Breaker state, the spend ledger, the metrics,
// the attempt log, the in-flight counts and the open upstream connections
// carry over.
//
// The new config is checked first as at start: load's error, Validate,
// every variable it names set, nothing changed that takes a restart
// (*RestartError). When it fails, the gateway keeps the config it has.
// Either way the result is logged in one line and counted in
// sluice_config_reloads_total.
func (g *Gateway) Reload(load func() (*config.Config, error)) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	next, err := g.next(load)
	if err != nil {
		g.metrics.reloads.WithLabelValues("error").Inc()
		g.logger.Error("config reload refused; still serving the previous config", "err", err)
		return err
	}
	g.current.Store(next)
	g.metrics.reloads.WithLabelValues("ok").Inc()
	for _, w := range next.cfg.Warnings() {
		g.logger.Warn(w)
	}
	g.logger.Info("config reloaded", "routes", next.describeRoutes())
	return nil
}

// next loads and checks the next config and builds its snapshot.
func (g *Gateway) next(load func() (*config.Config, error)) (*Gateway, error) {
	cfg, err := load()
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := needsRestart(g.current.Load().cfg, cfg); err != nil {
		return nil, err
	}
	return g.build(cfg)
}

// needsRestart returns a *RestartError for the first option read only at
// start that differs between old and cfg.
func needsRestart(old, cfg *config.Config) error {
	for _, o := range []struct{ key, old, new string }{
		{"listen", old.Listen, cfg.Listen},
		{"state.backend", old.State.Backend, cfg.State.Backend},
		{"state.dir", old.State.Dir, cfg.State.Dir},
		{"state.url", redactURL(old.State.URL), redactURL(cfg.State.URL)},
		{"state.redis", redisOf(old), redisOf(cfg)},
		{"log.attempts", old.Log.Attempts, cfg.Log.Attempts},
		{"limits.read_header_timeout", old.Limits.ReadHeaderTimeout.String(), cfg.Limits.ReadHeaderTimeout.String()},
		{"limits.max_header_bytes", fmt.Sprint(old.Limits.MaxHeaderBytes), fmt.Sprint(cfg.Limits.MaxHeaderBytes)},
		{"tracing", fmt.Sprintf("%+v", old.Tracing), fmt.Sprintf("%+v", cfg.Tracing)},
	} {
		if o.old != o.new {
			return &RestartError{Key: o.key, Old: o.old, New: o.new}
		}
	}
	return nil
}

// redisOf says how c reaches Redis beyond state.url, never with a
// password: the deployment (the Sentinel master and sentinels, the
// cluster's seeds), the ACL user, the password's variable and the TLS
// files.
func redisOf(c *config.Config) string {
	if c.State.Backend != config.BackendRedis {
		return ""
	}
	s := c.StateWhere()
	if r := c.State.Redis; r.PasswordEnv != "" {
		s += " password_env=" + r.PasswordEnv
	}
	if t := c.State.Redis.TLS; t != nil {
		s += fmt.Sprintf(" ca_file=%s cert_file=%s key_file=%s", t.CAFile, t.CertFile, t.KeyFile)
	}
	return s
}

// redactURL returns a state URL with its password, if any, masked: the
// reload's message goes to the log.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	return u.Redacted()
}

// describeRoutes lists the routes as "prefix → base URL", for the log.
func (g *Gateway) describeRoutes() string {
	var out []string
	for _, r := range g.cfg.Routes {
		out = append(out, r.Prefix+" → "+g.cfg.Providers[r.Provider].BaseURL)
	}
	return strings.Join(out, ", ")
}
