package config

import (
	"cmp"
	"maps"
	"math"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/limit"
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
	sha256RE  = regexp.MustCompile(`^sha256:[0-9A-Fa-f]{64}$`)
)

// The checks below are mostly lists of rules, each a refuse or a helper
// that returns nil when its value is good; cmp.Or returns the first
// refusal. Every rule is evaluated, so a rule that needs an earlier one to
// hold (a value that exists, an index in range) goes in a switch instead.

// refuse returns the *Error errf makes when bad, else nil.
func refuse(bad bool, path, format string, args ...any) error {
	if bad {
		return errf(path, format, args...)
	}
	return nil
}

// each returns the first refusal check gives an item of list, in order.
func each[T any](list []T, check func(i int, v T) error) error {
	for i, v := range list {
		if err := check(i, v); err != nil {
			return err
		}
	}
	return nil
}

// byName returns the first refusal check gives an entry of m, in the
// order of their names.
func byName[T any](m map[string]T, check func(name string, v T) error) error {
	return each(slices.Sorted(maps.Keys(m)), func(_ int, name string) error { return check(name, m[name]) })
}

// positive checks a duration that must be more than zero.
func positive(path string, d time.Duration, example string) error {
	return cmp.Or(refuse(d < 0, path, "%v is negative; write e.g. %s", d, example),
		refuse(d == 0, path, "must be more than 0; write e.g. %s", example))
}

// atLeast1 checks a count that must be at least 1; hint says more.
func atLeast1(path string, n int, hint string) error {
	return refuse(n < 1, path, "%d: must be at least 1 (%s)", n, hint)
}

// oneOf checks that got is one of the values a what may have, suggesting
// the nearest when it is not.
func oneOf(path, what, got string, values ...string) error {
	return refuse(!slices.Contains(values, got), path, "unknown %s %s%s", what, quote(got), suggest(got, values))
}

// envName checks the name of an environment variable, when one is given.
func envName(path, name, example string) error {
	return refuse(name != "" && !envNameRE.MatchString(name), path,
		"%s is not an environment variable name (write e.g. %s)", quote(name), example)
}

func (c *Config) checkListen() error {
	_, ok := splitListen(c.Listen)
	return cmp.Or(refuse(!ok, "listen", "%s is not host:port (write e.g. 127.0.0.1:8080, or :8080 for every interface)", quote(c.Listen)),
		refuse(c.Drain < 0, "drain", "%v is negative; write how long calls may finish after SIGTERM, e.g. 30s", c.Drain))
}

// splitListen returns the host of a host:port address whose port is a
// number from 0 to 65535.
func splitListen(addr string) (string, bool) {
	host, port, err := net.SplitHostPort(addr)
	_, bad := strconv.ParseUint(port, 10, 16)
	return host, err == nil && bad == nil
}

// loopback reports whether addr only accepts connections from this machine.
func loopback(addr string) bool {
	host, ok := splitListen(addr)
	ip := net.ParseIP(host)
	return ok && (host == "localhost" || ip != nil && ip.IsLoopback())
}

func (c *Config) checkState() error {
	s := c.State
	return cmp.Or(oneOf("state.backend", "backend", s.Backend, BackendMemory, BackendFile, BackendRedis),
		refuse(s.Backend != BackendRedis && s.URL != "", "state.url",
			"only the redis backend uses a URL; set state.backend: redis or remove state.url"),
		c.checkRedis())
}

// checkAuth checks the client tokens without ever showing one.
func (c *Config) checkAuth() error {
	return cmp.Or(each(c.Auth.Keys, func(i int, k string) error {
		p := index("auth.keys", i)
		return cmp.Or(refuse(k == "", p, "empty token; remove it or write a token"),
			refuse(strings.IndexFunc(k, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0, p,
				"a token must not hold spaces or control characters"),
			refuse(strings.HasPrefix(k, "sha256:") && !sha256RE.MatchString(k), p,
				"sha256: must be followed by the 64 hex digits of the token's SHA-256"))
	}), envName("admin.token_env", c.Admin.TokenEnv, "SLUICE_ADMIN_TOKEN"))
}

func (c *Config) checkRoutes() error {
	if len(c.Routes) == 0 {
		return errf("routes", "none defined; add one, e.g. {prefix: /openai, provider: openai, policy: interactive}")
	}
	seen := map[string]int{}
	return each(c.Routes, func(i int, r Route) error {
		p, norm := index("routes", i), strings.TrimRight(r.Prefix, "/")
		j, dup := seen[norm]
		seen[norm] = i
		return cmp.Or(checkPrefix(key(p, "prefix"), r.Prefix),
			refuse(dup, key(p, "prefix"), "%s is also the prefix of routes[%d]; give each route its own prefix", quote(r.Prefix), j),
			c.checkRoute(p, r))
	})
}

func checkPrefix(path, s string) error {
	n, segs, q := strings.TrimRight(s, "/"), strings.Split(s, "/"), quote(s)
	return cmp.Or(refuse(s == "", path, "missing; write the path prefix, e.g. /openai"),
		refuse(!strings.HasPrefix(s, "/"), path, "%s must start with '/' (write %s)", q, quote("/"+s)),
		refuse(!prefixRE.MatchString(s), path, "%s may hold only letters, digits and - _ . ~ / (no ?, #, %%, spaces)", q),
		refuse(strings.Contains(s, "//") || slices.Contains(segs, "..") || slices.Contains(segs, "."), path,
			"%s must be a clean path: no //, . or .. segments", q),
		refuse(n == "/healthz" || n == "/metrics" || n == "/sluice" || strings.HasPrefix(n, "/sluice/"), path,
			"%s is one of the gateway's own endpoints; choose another prefix", q))
}

func (c *Config) checkRoute(p string, r Route) error {
	providers := slices.Sorted(maps.Keys(c.Providers))
	pr, ok := c.Providers[r.Provider]
	_, hasPolicy := c.Policies[r.Policy]
	switch {
	case r.Provider == "":
		return errf(key(p, "provider"), "missing; name one of the providers: %s", strings.Join(providers, ", "))
	case !ok:
		return errf(key(p, "provider"), "provider %s is not defined under providers%s", quote(r.Provider), suggest(r.Provider, providers))
	case !hasPolicy:
		hint := ""
		if r.Policy == "interactive" || r.Policy == "nightly" {
			hint = "; add " + r.Policy + ": {} under policies to keep the built-in one"
		}
		return errf(key(p, "policy"), "policy %s is not defined under policies%s%s", quote(r.Policy),
			suggest(r.Policy, slices.Collect(maps.Keys(c.Policies))), hint)
	}
	return each(r.Fallbacks, func(j int, t Target) error {
		fp := index(key(p, "fallbacks"), j)
		fb, ok := c.Providers[t.Provider]
		switch {
		case !ok:
			return errf(key(fp, "provider"), "provider %s is not defined under providers%s", quote(t.Provider), suggest(t.Provider, providers))
		case fb.Kind != pr.Kind && !translates(pr.Kind, fb.Kind):
			return errf(key(fp, "provider"), "%s speaks the %s API but the route's provider %s speaks %s; a fallback must speak the same API%s",
				quote(t.Provider), fb.Kind, quote(r.Provider), pr.Kind, translatedTo(pr.Kind))
		case fb.Kind != pr.Kind && fb.Kind == dialect.Vertex.Kind() && (fb.Project == "" || fb.Region == ""):
			return errf(key(fp, "provider"), "%s (kind %s) would take the route's %s calls translated, sent under "+
				"/v1/projects/{project}/locations/{region}; set providers.%s.project and region, e.g. {project: my-project, region: us-central1}",
				quote(t.Provider), fb.Kind, pr.Kind, t.Provider)
		case t.Model == "":
			return errf(key(fp, "model"), "missing; name the model the request is rewritten to, e.g. gpt-4o-mini")
		}
		return nil
	})
}

func (c *Config) checkBudgets() error {
	names := map[string]int{}
	return each(c.Budgets, func(i int, b spend.Budget) error {
		p := index("budgets", i)
		return cmp.Or(checkListName("budgets", "budget", i, b.Name, names),
			refuse(!(b.LimitUSD > 0) || math.IsInf(b.LimitUSD, 0), key(p, "limit_usd"),
				"must be more than 0 (US dollars per period, e.g. 20)"),
			checkPeriod(key(p, "period"), b.Period),
			oneOf(key(p, "scope"), "scope", b.Scope, "all", "key", "model", "provider"))
	})
}

func (c *Config) checkRates() error {
	names := map[string]int{}
	return each(c.Limits.Rates, func(i int, l limit.Limit) error {
		p := index("limits.rates", i)
		_, known := c.Providers[l.Provider]
		check := l.Check()
		return cmp.Or(checkListName("limits.rates", "limit", i, l.Name, names),
			refuse(l.Name == MaxConcurrentLimit, key(p, "name"),
				"%s names the limit each provider's max_concurrent makes; choose another name", quote(l.Name)),
			refuse(l.Provider != "" && !known, key(p, "provider"),
				"%s is not a configured provider; name one of providers, or leave it out for every provider", quote(l.Provider)),
			refuse(!slices.Contains([]string{"provider", "model", "key", "all"}, l.Scope), key(p, "scope"),
				"%s: use provider, model, key or all", quote(l.Scope)),
			refuse(l.Concurrent < 0, key(p, "concurrent"),
				"%d: give the calls that may be in flight at once, at least 1, or leave it out", l.Concurrent),
			refuse(l.Requests.Limit == 0 && l.Tokens.Limit == 0 && l.Concurrent == 0, p,
				"limits nothing; give requests_per_minute, tokens_per_minute, concurrent, or several"),
			refuse(check != nil, p, "%v", check))
	})
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

func checkPeriod(path, s string) error {
	if s == "day" || s == "month" {
		return nil
	}
	d, err := time.ParseDuration(s)
	return cmp.Or(refuse(s == "", path, "missing; write day, month or a duration such as 6h"),
		refuse(err != nil || d <= 0, path, "%s is not day, month or a positive duration such as 6h", quote(s)))
}

func (c *Config) checkPrices() error {
	return byName(c.Prices, func(model string, pr spend.Price) error {
		p := key("prices", model)
		price := func(k string, v float64) error {
			return refuse(!(v >= 0) || math.IsInf(v, 0), key(p, k), "%v: must be 0 or more (USD per million tokens, e.g. 0.15)", v)
		}
		return cmp.Or(modelName("prices", model, ""), price("input", pr.Input), price("output", pr.Output),
			price("cache_read", pr.CacheRead), price("cache_write", pr.CacheWrite))
	})
}

// modelName checks the name of a model, which '*' may end, under the
// section at path; more says more of how to name one.
func modelName(path, model, more string) error {
	return cmp.Or(refuse(model == "", path, "an empty model name; name the model, e.g. gpt-4o-mini%s", more),
		refuse(strings.Contains(strings.TrimSuffix(model, "*"), "*"), key(path, model), "'*' may only end a name, as in gpt-4o*"))
}

func (c *Config) checkLimits() error {
	h := c.Limits.MaxHeaderBytes
	return cmp.Or(refuse(c.Limits.MaxBodyBytes < 1, "limits.max_body", "must be more than 0 (write e.g. 20MiB)"),
		refuse(h < 1<<10 || h > 16<<20, "limits.max_header_bytes", "%d bytes: must be from 1KiB to 16MiB (write e.g. 64KiB)", h),
		positive("limits.read_header_timeout", c.Limits.ReadHeaderTimeout, "10s"))
}

// checkInjectedKeys refuses to hand out a provider key to anyone who can
// reach the gateway.
func (c *Config) checkInjectedKeys() error {
	if len(c.Auth.Keys) > 0 || loopback(c.Listen) {
		return nil
	}
	return byName(c.Providers, func(name string, pr Provider) error {
		k := "api_key_env"
		if len(pr.APIKeys) > 0 {
			k = "api_keys_env"
		}
		return refuse(pr.APIKeyEnv != "" || len(pr.APIKeys) > 0, key(key("providers", name), k),
			"the gateway would hand this provider's key to anyone who reaches %s; add auth.keys or listen on 127.0.0.1", c.Listen)
	})
}

// translates reports whether the engine translates a call of kind from
// for a fallback of kind to (sluice.Translates).
func translates(from, to string) bool {
	f, ok1 := dialect.Lookup(from)
	t, ok2 := dialect.Lookup(to)
	return ok1 && ok2 && sluice.Translates(f, t)
}

// translatedTo says, for an error, the kinds a call of kind from may fall
// back to besides its own: "" when none.
func translatedTo(from string) string {
	kinds := slices.DeleteFunc(dialect.Kinds(), func(k string) bool { return k == from || !translates(from, k) })
	if len(kinds) == 0 {
		return ""
	}
	return ", or one Sluice translates " + from + " calls to: " + strings.Join(kinds, ", ")
}
