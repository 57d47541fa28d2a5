package config

import (
	"encoding/hex"
	"maps"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/spend"
)

// Validate checks c and returns the first problem it finds, as an *Error
// whose one-line message names the key and the fix. Parse calls it; call
// it again after changing a field (a --listen flag, say).
func (c *Config) Validate() error {
	checks := []func() error{
		c.checkListen, c.checkState, c.checkAuth, c.checkProviders,
		c.checkPolicies, c.checkPriorities, c.checkRoutes, c.checkBudgets, c.checkRates, c.checkPrices,
		c.checkLimits, c.checkInjectedKeys, c.checkTracing, c.checkIdempotency,
	}
	for _, check := range checks {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

var (
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	nameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	prefixRE  = regexp.MustCompile(`^[A-Za-z0-9_.~/-]*$`)
)

func (c *Config) checkListen() error {
	if _, ok := splitListen(c.Listen); !ok {
		return errf("listen", "%s is not host:port (write e.g. 127.0.0.1:8080, or :8080 for every interface)", quote(c.Listen))
	}
	if c.Drain < 0 {
		return errf("drain", "%v is negative; write how long calls may finish after SIGTERM, e.g. 30s", c.Drain)
	}
	return nil
}

// splitListen returns the host of a host:port address with a numeric port.
func splitListen(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || strings.TrimLeft(port, "0123456789") != "" {
		return "", false
	}
	n, err := strconv.Atoi(port)
	return host, err == nil && n <= 65535
}

// loopback reports whether addr only accepts connections from this machine.
func loopback(addr string) bool {
	host, ok := splitListen(addr)
	if !ok {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Config) checkState() error {
	s := c.State
	switch s.Backend {
	case BackendMemory, BackendFile:
		if s.URL != "" {
			return errf("state.url", "only the redis backend uses a URL; set state.backend: redis or remove state.url")
		}
		return c.checkRedis()
	case BackendRedis:
		return c.checkRedis()
	}
	return errf("state.backend", "unknown backend %s%s", quote(s.Backend),
		suggest(s.Backend, []string{BackendMemory, BackendFile, BackendRedis}))
}

// checkAuth checks the client tokens without ever showing one.
func (c *Config) checkAuth() error {
	for i, k := range c.Auth.Keys {
		p := index("auth.keys", i)
		if k == "" {
			return errf(p, "empty token; remove it or write a token")
		}
		if strings.IndexFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			return errf(p, "a token must not hold spaces or control characters")
		}
		if h, ok := strings.CutPrefix(k, "sha256:"); ok {
			if b, err := hex.DecodeString(h); err != nil || len(b) != 32 {
				return errf(p, "sha256: must be followed by the 64 hex digits of the token's SHA-256")
			}
		}
	}
	if e := c.Admin.TokenEnv; e != "" && !envNameRE.MatchString(e) {
		return errf("admin.token_env", "%s is not an environment variable name (write e.g. SLUICE_ADMIN_TOKEN)", quote(e))
	}
	return nil
}

func (c *Config) checkRoutes() error {
	if len(c.Routes) == 0 {
		return errf("routes", "none defined; add one, e.g. {prefix: /openai, provider: openai, policy: interactive}")
	}
	seen := map[string]int{}
	for i, r := range c.Routes {
		p := index("routes", i)
		if err := checkPrefix(key(p, "prefix"), r.Prefix); err != nil {
			return err
		}
		norm := strings.TrimRight(r.Prefix, "/")
		if j, dup := seen[norm]; dup {
			return errf(key(p, "prefix"), "%s is also the prefix of routes[%d]; give each route its own prefix", quote(r.Prefix), j)
		}
		seen[norm] = i
		if err := c.checkRoute(p, r); err != nil {
			return err
		}
	}
	return nil
}

func checkPrefix(path, s string) error {
	switch {
	case s == "":
		return errf(path, "missing; write the path prefix, e.g. /openai")
	case !strings.HasPrefix(s, "/"):
		return errf(path, "%s must start with '/' (write %s)", quote(s), quote("/"+s))
	case !prefixRE.MatchString(s):
		return errf(path, "%s may hold only letters, digits and - _ . ~ / (no ?, #, %%, spaces)", quote(s))
	case strings.Contains(s, "//") || slices.Contains(strings.Split(s, "/"), "..") ||
		slices.Contains(strings.Split(s, "/"), "."):
		return errf(path, "%s must be a clean path: no //, . or .. segments", quote(s))
	}
	n := strings.TrimRight(s, "/")
	if n == "/healthz" || n == "/metrics" || n == "/sluice" || strings.HasPrefix(n, "/sluice/") {
		return errf(path, "%s is one of the gateway's own endpoints; choose another prefix", quote(s))
	}
	return nil
}

func (c *Config) checkRoute(p string, r Route) error {
	providers := slices.Sorted(maps.Keys(c.Providers))
	pr, ok := c.Providers[r.Provider]
	if r.Provider == "" {
		return errf(key(p, "provider"), "missing; name one of the providers: %s", strings.Join(providers, ", "))
	}
	if !ok {
		return errf(key(p, "provider"), "provider %s is not defined under providers%s",
			quote(r.Provider), suggest(r.Provider, providers))
	}
	if _, ok := c.Policies[r.Policy]; !ok {
		hint := ""
		if r.Policy == "interactive" || r.Policy == "nightly" {
			hint = "; add " + r.Policy + ": {} under policies to keep the built-in one"
		}
		return errf(key(p, "policy"), "policy %s is not defined under policies%s%s", quote(r.Policy),
			suggest(r.Policy, slices.Sorted(maps.Keys(c.Policies))), hint)
	}
	for j, t := range r.Fallbacks {
		fp := index(key(p, "fallbacks"), j)
		fb, ok := c.Providers[t.Provider]
		switch {
		case !ok:
			return errf(key(fp, "provider"), "provider %s is not defined under providers%s",
				quote(t.Provider), suggest(t.Provider, providers))
		case fb.Kind != pr.Kind:
			return errf(key(fp, "provider"), "%s speaks the %s API but the route's provider %s speaks %s; a fallback must speak the same API",
				quote(t.Provider), fb.Kind, quote(r.Provider), pr.Kind)
		case t.Model == "":
			return errf(key(fp, "model"), "missing; name the model the request is rewritten to, e.g. gpt-4o-mini")
		}
	}
	return nil
}

func (c *Config) checkBudgets() error {
	names := map[string]int{}
	for i, b := range c.Budgets {
		p := index("budgets", i)
		if err := checkListName("budgets", "budget", i, b.Name, names); err != nil {
			return err
		}
		if err := checkBudget(p, b); err != nil {
			return err
		}
	}
	return nil
}

func (c *Config) checkRates() error {
	names := map[string]int{}
	for i, l := range c.Rates {
		p := index("limits.rates", i)
		if err := checkListName("limits.rates", "limit", i, l.Name, names); err != nil {
			return err
		}
		if l.Name == MaxConcurrentLimit {
			return errf(key(p, "name"), "%s names the limit each provider's max_concurrent makes; choose another name", quote(l.Name))
		}
		if _, ok := c.Providers[l.Provider]; l.Provider != "" && !ok {
			return errf(key(p, "provider"), "%s is not a configured provider; name one of providers, or leave it out for every provider", quote(l.Provider))
		}
		switch l.Scope {
		case "provider", "model", "key", "all":
		default:
			return errf(key(p, "scope"), "%s: use provider, model, key or all", quote(l.Scope))
		}
		if l.Concurrent < 0 {
			return errf(key(p, "concurrent"), "%d: give the calls that may be in flight at once, at least 1, or leave it out", l.Concurrent)
		}
		if l.Requests.Limit == 0 && l.Tokens.Limit == 0 && l.Concurrent == 0 {
			return errf(p, "limits nothing; give requests_per_minute, tokens_per_minute, concurrent, or several")
		}
		if err := l.Check(); err != nil {
			return errf(p, "%v", err)
		}
	}
	return nil
}

// checkListName checks the name of entry i of the list section: there, of
// the letters names may hold, and not another entry's (names records the
// names seen, by entry).
func checkListName(section, what string, i int, name string, names map[string]int) error {
	k := key(index(section, i), "name")
	switch j, dup := names[name]; {
	case name == "":
		return errf(k, "missing; name the %s (the name shows in logs and metrics)", what)
	case !nameRE.MatchString(name):
		return errf(k, "%s may hold only letters, digits, '_', '-' and '.'", quote(name))
	case dup:
		return errf(k, "%s is also the name of %s[%d]; give each %s its own name", quote(name), section, j, what)
	}
	names[name] = i
	return nil
}

func checkBudget(p string, b spend.Budget) error {
	if !(b.LimitUSD > 0) || math.IsInf(b.LimitUSD, 0) {
		return errf(key(p, "limit_usd"), "must be more than 0 (US dollars per period, e.g. 20)")
	}
	if err := checkPeriod(key(p, "period"), b.Period); err != nil {
		return err
	}
	scopes := []string{"all", "key", "model", "provider"}
	if !slices.Contains(scopes, b.Scope) {
		return errf(key(p, "scope"), "unknown scope %s%s", quote(b.Scope), suggest(b.Scope, scopes))
	}
	return nil
}

func checkPeriod(path, s string) error {
	if s == "day" || s == "month" {
		return nil
	}
	if s == "" {
		return errf(path, "missing; write day, month or a duration such as 6h")
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return errf(path, "%s is not day, month or a positive duration such as 6h", quote(s))
	}
	return nil
}

func (c *Config) checkPrices() error {
	for _, model := range slices.Sorted(maps.Keys(c.Prices)) {
		p := key("prices", model)
		stem, _ := strings.CutSuffix(model, "*")
		switch {
		case model == "":
			return errf("prices", "an empty model name; name the model, e.g. gpt-4o-mini")
		case strings.Contains(stem, "*"):
			return errf(p, "'*' may only end a name, as in gpt-4o*")
		}
		pr := c.Prices[model]
		for _, f := range []struct {
			name string
			v    float64
		}{{"input", pr.Input}, {"output", pr.Output}, {"cache_read", pr.CacheRead}, {"cache_write", pr.CacheWrite}} {
			if !(f.v >= 0) || math.IsInf(f.v, 0) {
				return errf(key(p, f.name), "%v: must be 0 or more (USD per million tokens, e.g. 0.15)", f.v)
			}
		}
	}
	return nil
}

func (c *Config) checkLimits() error {
	if c.Limits.MaxBodyBytes < 1 {
		return errf("limits.max_body", "must be more than 0 (write e.g. 20MiB)")
	}
	if h := c.Limits.MaxHeaderBytes; h < 1<<10 || h > 16<<20 {
		return errf("limits.max_header_bytes", "%d bytes: must be from 1KiB to 16MiB (write e.g. 64KiB)", h)
	}
	return positive("limits.read_header_timeout", c.Limits.ReadHeaderTimeout, "10s")
}

// checkInjectedKeys refuses to hand out a provider key to anyone who can
// reach the gateway.
func (c *Config) checkInjectedKeys() error {
	if len(c.Auth.Keys) > 0 || loopback(c.Listen) {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(c.Providers)) {
		if pr := c.Providers[name]; pr.APIKeyEnv != "" || len(pr.APIKeys) > 0 {
			k := "api_key_env"
			if len(pr.APIKeys) > 0 {
				k = "api_keys_env"
			}
			return errf(key(key("providers", name), k),
				"the gateway would hand this provider's key to anyone who reaches %s; add auth.keys or listen on 127.0.0.1", c.Listen)
		}
	}
	return nil
}

// positive checks a duration that must be more than zero.
func positive(path string, d time.Duration, example string) error {
	switch {
	case d < 0:
		return errf(path, "%v is negative; write e.g. %s", d, example)
	case d == 0:
		return errf(path, "must be more than 0; write e.g. %s", example)
	}
	return nil
}
