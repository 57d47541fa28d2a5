package config

import (
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// Parse parses a YAML config over the built-in defaults and validates it.
//
// A key present in the file replaces its default; a key left out keeps it.
// The providers, routes, policies, budgets and prices sections are
// replaced as a whole when the file has them, with two exceptions that
// fill in what a partial entry leaves out: a policy takes its missing
// fields from the built-in policy of the same name (nightly), or from
// interactive for any other name; and a provider named openai, anthropic or
// gemini takes its missing fields from the preset provider of that name.
// A key with no value (null) is the same as a key left out. A drain left
// out is the longest total of the policies the file ends with.
func Parse(data []byte) (*Config, error) {
	if len(data) > maxFileSize {
		return nil, errf("", "the file is larger than 4 MiB; a config is a few kilobytes, is this the right file?")
	}
	root, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	c := Default()
	d := newDecoder()
	if root != nil && !isNull(root) {
		if err := d.config(root, c); err != nil {
			return nil, err
		}
	}
	if !d.drainSet {
		c.Drain, _ = c.LongestTotal()
	}
	if err := c.Validate(); err != nil {
		return nil, d.locate(err)
	}
	return c, nil
}

func (d *decoder) config(n *yaml.Node, c *Config) error {
	n, err := d.deref(n)
	if err != nil {
		return err
	}
	if n.Kind != yaml.MappingNode {
		return errAt(n.Line, "", "the file must be a mapping of keys (listen:, routes:, policies:, …), found %s", describe(n))
	}
	return d.fields(n, "", map[string]field{
		"listen": str(&c.Listen),
		"drain": func(n *yaml.Node, path string) error {
			d.drainSet = true
			return duration(&c.Drain)(n, path)
		},
		"state": d.section(map[string]field{
			"backend": str(&c.State.Backend),
			"dir":     str(&c.State.Dir),
			"url":     str(&c.State.URL),
			"redis":   d.redisSection(&c.State.Redis),
		}),
		"log":       d.section(map[string]field{"attempts": str(&c.Log.Attempts)}),
		"auth":      d.section(map[string]field{"keys": d.strs(&c.Auth.Keys)}),
		"admin":     d.section(map[string]field{"token_env": str(&c.Admin.TokenEnv)}),
		"providers": d.providers(c),
		"routes":    d.routes(c),
		"policies":  d.policies(c),
		"budgets":   d.budgets(c),
		"prices":    d.prices(c),
		"limits": d.section(map[string]field{
			"max_body":            size(&c.Limits.MaxBodyBytes),
			"read_header_timeout": duration(&c.Limits.ReadHeaderTimeout),
			"max_header_bytes":    size(&c.Limits.MaxHeaderBytes),
			"rates":               d.rates(c),
			"promote_after":       duration(&c.Limits.PromoteAfter),
		}),
		"idempotency": d.section(map[string]field{
			"enabled":              boolean(&c.Idempotency.Enabled),
			"ttl":                  duration(&c.Idempotency.TTL),
			"max_answer":           size(&c.Idempotency.MaxAnswer),
			"max_bytes":            size(&c.Idempotency.MaxBytes),
			"finish_on_disconnect": boolean(&c.Idempotency.FinishOnDisconnect),
		}),
		"tracing": d.section(map[string]field{
			"enabled":      boolean(&c.Tracing.Enabled),
			"endpoint":     str(&c.Tracing.Endpoint),
			"sample_ratio": number(&c.Tracing.SampleRatio),
			"service_name": str(&c.Tracing.ServiceName),
		}),
	})
}

func (d *decoder) providers(c *Config) field {
	return func(n *yaml.Node, path string) error {
		c.Providers = map[string]Provider{}
		builtins := presetProviders()
		return d.named(n, path, func(name string, n *yaml.Node, p string) error {
			pr, ok := builtins[name]
			if !ok {
				pr = Provider{MaxConcurrent: DefaultMaxConcurrent}
			}
			err := d.fields(n, p, map[string]field{
				"kind":             str(&pr.Kind),
				"base_url":         str(&pr.BaseURL),
				"api_key_env":      str(&pr.APIKeyEnv),
				"api_keys_env":     d.poolKeys(&pr.APIKeys),
				"max_concurrent":   integer(&pr.MaxConcurrent),
				"region":           str(&pr.Region),
				"credentials_file": str(&pr.CredentialsFile),
			})
			if t := strings.TrimRight(pr.BaseURL, "/"); !strings.HasSuffix(t, ":") {
				pr.BaseURL = t
			}
			if err == nil && pr.Region == "" {
				switch pr.Region, err = chainRegion(pr.Kind); {
				case err != nil:
					err = errf(key(p, "region"), "missing, and the standard chain's cannot be read: %v; write e.g. region: us-east-1", err)
				case pr.Region != "" && !regionRE.MatchString(pr.Region):
					err = errf(key(p, "region"), "missing, and the standard chain's, %s, is not a region: write e.g. region: us-east-1, or fix AWS_REGION or the profile", quote(pr.Region))
				}
			}
			if pr.BaseURL == "" {
				pr.BaseURL = regionalBaseURL(pr.Kind, pr.Region)
			}
			c.Providers[name] = pr
			return err
		})
	}
}

// poolKeys decodes api_keys_env: a list whose items are an environment
// variable's name, or {env: NAME, weight: N}.
func (d *decoder) poolKeys(dst *[]PoolKey) field {
	return func(n *yaml.Node, path string) error {
		out := []PoolKey{}
		err := d.list(n, path, func(_ int, n *yaml.Node, p string) error {
			k := PoolKey{Weight: 1}
			var err error
			if n.Kind == yaml.ScalarNode {
				k.Env, err = scalar(n, p)
			} else {
				err = d.fields(n, p, map[string]field{"env": str(&k.Env), "weight": integer(&k.Weight)})
			}
			out = append(out, k)
			return err
		})
		*dst = out
		return err
	}
}

func (d *decoder) routes(c *Config) field {
	return func(n *yaml.Node, path string) error {
		c.Routes = []Route{}
		return d.list(n, path, func(_ int, n *yaml.Node, p string) error {
			r := Route{Policy: "interactive", RetrySafe: true}
			err := d.fields(n, p, map[string]field{
				"prefix":     str(&r.Prefix),
				"provider":   str(&r.Provider),
				"policy":     str(&r.Policy),
				"fallbacks":  d.fallbacks(&r.Fallbacks),
				"retry_safe": boolean(&r.RetrySafe),
			})
			if t := strings.TrimRight(r.Prefix, "/"); t != "" {
				r.Prefix = t
			} else if r.Prefix != "" {
				r.Prefix = "/"
			}
			c.Routes = append(c.Routes, r)
			return err
		})
	}
}

func (d *decoder) fallbacks(dst *[]Target) field {
	return func(n *yaml.Node, path string) error {
		*dst = []Target{}
		return d.list(n, path, func(_ int, n *yaml.Node, p string) error {
			var t Target
			err := d.fields(n, p, map[string]field{
				"provider": str(&t.Provider),
				"model":    str(&t.Model),
			})
			*dst = append(*dst, t)
			return err
		})
	}
}

func (d *decoder) policies(c *Config) field {
	return func(n *yaml.Node, path string) error {
		c.Policies = map[string]sluice.Policy{}
		return d.named(n, path, func(name string, n *yaml.Node, p string) error {
			pol := builtinPolicy(name)
			err := d.policy(n, p, &pol)
			pol.Name = name
			pol.Breaker.Lease = pol.Timeout.Total
			c.Policies[name] = pol
			return err
		})
	}
}

func (d *decoder) policy(n *yaml.Node, path string, p *sluice.Policy) error {
	t, r, b := &p.Timeout, &p.Retry, &p.Breaker
	return d.fields(n, path, map[string]field{
		"timeout": d.section(map[string]field{
			"connect":    duration(&t.Connect),
			"first_byte": duration(&t.FirstByte),
			"idle":       duration(&t.Idle),
			"total":      duration(&t.Total),
		}),
		"retry": d.section(map[string]field{
			"max_attempts":     integer(&r.MaxAttempts),
			"base":             duration(&r.Base),
			"cap":              duration(&r.Cap),
			"max_retry_after":  duration(&r.MaxRetryAfter),
			"statuses":         d.ints(&r.Statuses),
			"quota_markers":    d.strs(&r.QuotaMarkers),
			"fallback_markers": d.strs(&r.FallbackMarkers),
			"budget":           retryBudget(&r.Budget),
		}),
		"max_queue": duration(&p.MaxQueue),
		"priority":  priorityField(&p.Priority),
		"breaker": d.section(map[string]field{
			"failures": integer(&b.Failures),
			"cool":     duration(&b.Cool),
			"scope":    scope(&p.BreakerScope),
			"slow": d.section(map[string]field{
				"threshold": duration(&b.Slow.Threshold),
				"count":     integer(&b.Slow.Count),
				"window":    duration(&b.Slow.Window),
			}),
		}),
	})
}

func scope(dst *sluice.Scope) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		*dst = sluice.Scope(s)
		return err
	}
}

// retryBudget decodes retry.budget: a fraction (0.2), a percentage (20%),
// or off (stored as -1).
func retryBudget(dst *float64) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		if err != nil {
			return err
		}
		if s == "off" {
			*dst = -1
			return nil
		}
		if pct, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
			if err != nil {
				return errAt(n.Line, path, "%s is not a percentage (write e.g. 20%% or 0.2, or off)", quote(s))
			}
			*dst = v / 100
			return nil
		}
		if err := number(dst)(n, path); err != nil {
			return errAt(n.Line, path, "%s is not a fraction (write e.g. 0.2 or 20%%, or off)", quote(s))
		}
		return nil
	}
}

func (d *decoder) budgets(c *Config) field {
	return func(n *yaml.Node, path string) error {
		c.Budgets = []spend.Budget{}
		return d.list(n, path, func(_ int, n *yaml.Node, p string) error {
			b := spend.Budget{Scope: "all"}
			err := d.fields(n, p, map[string]field{
				"name":           str(&b.Name),
				"limit_usd":      number(&b.LimitUSD),
				"period":         str(&b.Period),
				"scope":          str(&b.Scope),
				"unpriced":       allowOrRefuse(&b.AllowUnpriced),
				"on_store_error": allowOrRefuse(&b.AllowOnLedgerError),
			})
			c.Budgets = append(c.Budgets, b)
			return err
		})
	}
}

// rates decodes limits.rates, the rate limits calls queue under.
func (d *decoder) rates(c *Config) field {
	return func(n *yaml.Node, path string) error {
		c.Rates = []limit.Limit{}
		return d.list(n, path, func(_ int, n *yaml.Node, p string) error {
			l := limit.Limit{Scope: "provider", Requests: limit.Rate{Per: time.Minute}, Tokens: limit.Rate{Per: time.Minute}}
			err := d.fields(n, p, map[string]field{
				"name":                str(&l.Name),
				"provider":            str(&l.Provider),
				"scope":               str(&l.Scope),
				"requests_per_minute": count(&l.Requests.Limit),
				"tokens_per_minute":   count(&l.Tokens.Limit),
				"concurrent":          integer(&l.Concurrent),
				"reserve":             share(&l.Reserve),
			})
			c.Rates = append(c.Rates, l)
			return err
		})
	}
}

func (d *decoder) prices(c *Config) field {
	return func(n *yaml.Node, path string) error {
		c.Prices = map[string]spend.Price{}
		return d.named(n, path, func(model string, n *yaml.Node, p string) error {
			var pr spend.Price
			var in, out bool
			err := d.fields(n, p, map[string]field{
				"input":       seen(&in, number(&pr.Input)),
				"output":      seen(&out, number(&pr.Output)),
				"cache_read":  number(&pr.CacheRead),
				"cache_write": number(&pr.CacheWrite),
			})
			if err != nil {
				return err
			}
			switch {
			case !in:
				return errAt(d.lines[p], key(p, "input"), "missing; give the USD price per million input tokens (0 if free)")
			case !out:
				return errAt(d.lines[p], key(p, "output"), "missing; give the USD price per million output tokens (0 if free)")
			}
			c.Prices[model] = pr
			return nil
		})
	}
}

// allowOrRefuse decodes "allow" (true) or "refuse" (false; also "", the
// default).
func allowOrRefuse(dst *bool) field {
	return func(n *yaml.Node, path string) error {
		switch n.Value {
		case "allow":
			*dst = true
		case "refuse", "":
			*dst = false
		default:
			return errAt(n.Line, path, "%s must be allow or refuse (or left out for the default, refuse)", quote(n.Value))
		}
		return nil
	}
}

// seen wraps f to record that the key was given.
func seen(given *bool, f field) field {
	return func(n *yaml.Node, path string) error {
		*given = true
		return f(n, path)
	}
}
