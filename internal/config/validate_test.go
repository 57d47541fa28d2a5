package config

import (
	"strings"
	"testing"
)

// badConfigs are refused configs and a part of the message each must give.
// Every message names the key path.
var badConfigs = []struct {
	name, src, want string
}{
	// Unknown keys, at every depth, with a suggestion when one is close.
	{"unknown top key", "listne: 127.0.0.1:1\n", "config: listne: unknown key (did you mean listen?) at line 1"},
	{"unknown nested key", "policies:\n  interactive:\n    retry: {max_atempts: 4}\n",
		"config: policies.interactive.retry.max_atempts: unknown key (did you mean max_attempts?) at line 3"},
	{"unknown key camel case", "policies: {nightly: {timeout: {firstByte: 1s}}}\n",
		"policies.nightly.timeout.firstByte: unknown key (did you mean first_byte?)"},
	{"unknown key far from any", "state: {colour: red}\n", "state.colour: unknown key (one of: backend, dir, redis, url)"},
	{"unknown provider key", "providers: {openai: {apikey: X}}\n", "providers.openai.apikey: unknown key (did you mean api_key_env?)"},
	{"unknown route key", "routes: [{prefix: /a, provider: openai, fallback: []}]\n", "routes[0].fallback: unknown key (did you mean fallbacks?)"},
	{"unknown fallback key", "routes: [{prefix: /a, provider: openai, fallbacks: [{provider: openai, modle: m}]}]\n",
		"routes[0].fallbacks[0].modle: unknown key (did you mean model?)"},
	{"unknown budget key", "budgets: [{name: d, limit: 3}]\n", "budgets[0].limit: unknown key (did you mean limit_usd?)"},
	{"unknown price key", "prices: {gpt-4o: {inputs: 1}}\n", "prices.gpt-4o.inputs: unknown key (did you mean input?)"},
	{"unknown price key quoted", "prices: {\"gpt-4.1\": {in: 1}}\n", `prices["gpt-4.1"].in: unknown key`},
	{"unknown limits key", "limits: {max_body_bytes: 1}\n", "limits.max_body_bytes: unknown key (did you mean max_body?)"},
	{"unknown slow key", "policies: {interactive: {breaker: {slow: {treshold: 1s}}}}\n",
		"policies.interactive.breaker.slow.treshold: unknown key (did you mean threshold?)"},
	{"duplicate key", "listen: 127.0.0.1:1\nlisten: 127.0.0.1:2\n", "config: listen: given twice (also at line 1); keep one at line 2"},

	// Durations.
	{"bad duration", "policies:\n  nightly:\n    timeout: {total: 30x}\n",
		`config: policies.nightly.timeout.total: "30x" is not a duration (write e.g. 30s or 2m) at line 3`},
	{"duration without unit", "drain: 30\n", `drain: "30" is not a duration (write e.g. 30s or 2m)`},
	{"duration list", "drain: [1s]\n", "drain: must be a single value, found a list"},
	{"negative drain", "drain: -1s\n", "drain: -1s is negative"},
	{"negative connect", "policies: {interactive: {timeout: {connect: -2s}}}\n", "policies.interactive.timeout.connect: -2s is negative; write e.g. 5s at line 1"},
	{"zero idle", "policies: {interactive: {timeout: {idle: 0s}}}\n", "policies.interactive.timeout.idle: must be more than 0; write e.g. 15s at line 1"},
	{"zero first byte", "policies: {interactive: {timeout: {first_byte: 0}}}\n", "policies.interactive.timeout.first_byte: must be more than 0"},
	{"zero base", "policies: {interactive: {retry: {base: 0s}}}\n", "policies.interactive.retry.base: must be more than 0"},
	{"zero max_retry_after", "policies: {interactive: {retry: {max_retry_after: 0s}}}\n", "policies.interactive.retry.max_retry_after: must be more than 0"},
	{"zero cool", "policies: {interactive: {breaker: {cool: 0s}}}\n", "policies.interactive.breaker.cool: must be more than 0"},
	{"negative slow threshold", "policies: {interactive: {breaker: {slow: {threshold: -1s}}}}\n", "policies.interactive.breaker.slow.threshold: -1s is negative"},
	{"zero slow window", "policies: {interactive: {breaker: {slow: {window: 0s}}}}\n", "policies.interactive.breaker.slow.window: must be more than 0"},
	{"zero read header timeout", "limits: {read_header_timeout: 0s}\n", "limits.read_header_timeout: must be more than 0"},
	{"total below connect + first_byte", "policies: {interactive: {timeout: {total: 20s}}}\n",
		"policies.interactive.timeout.total: 20s is shorter than connect + first_byte (5s + 20s = 25s); raise total to at least 25s"},
	{"total below inherited first_byte", "policies: {nightly: {timeout: {total: 2m}}}\n",
		"policies.nightly.timeout.total: 2m0s is shorter than connect + first_byte (10s + 2m0s = 2m10s)"},

	// Retry and breaker numbers.
	{"max_attempts zero", "policies: {interactive: {retry: {max_attempts: 0}}}\n", "policies.interactive.retry.max_attempts: 0: must be at least 1 (1 = never retry) at line 1"},
	{"max_attempts not a number", "policies: {interactive: {retry: {max_attempts: three}}}\n", `policies.interactive.retry.max_attempts: "three" is not a whole number`},
	{"max_attempts fraction", "policies: {interactive: {retry: {max_attempts: 2.5}}}\n", `policies.interactive.retry.max_attempts: "2.5" is not a whole number`},
	{"status too low", "policies: {interactive: {retry: {statuses: [503, 99]}}}\n", "policies.interactive.retry.statuses[1]: 99 is not an HTTP status; write statuses from 100 to 599, e.g. 503 at line 1"},
	{"status too high", "policies: {interactive: {retry: {statuses: [600]}}}\n", "policies.interactive.retry.statuses[0]: 600 is not an HTTP status"},
	{"statuses not a list", "policies: {interactive: {retry: {statuses: 503}}}\n", "policies.interactive.retry.statuses: must be a list"},
	{"cap below base", "policies: {interactive: {retry: {base: 2s, cap: 1s}}}\n", "policies.interactive.retry.cap: 1s is below base 2s"},
	{"empty quota marker", "policies: {interactive: {retry: {quota_markers: [x, \"\"]}}}\n", "policies.interactive.retry.quota_markers[1]: an empty marker would match every 429; remove it at line 1"},
	{"empty fallback marker", "policies: {interactive: {retry: {fallback_markers: [\"\"]}}}\n", "policies.interactive.retry.fallback_markers[0]: an empty marker would match every error; remove it at line 1"},
	{"retry budget above 1", "policies: {interactive: {retry: {budget: 1.5}}}\n", "policies.interactive.retry.budget: 1.5: must be a fraction above 0 and at most 1"},
	{"retry budget zero", "policies: {interactive: {retry: {budget: 0}}}\n", "policies.interactive.retry.budget: 0: must be a fraction"},
	{"retry budget word", "policies: {interactive: {retry: {budget: lots}}}\n", `policies.interactive.retry.budget: "lots" is not a fraction`},
	{"failures zero", "policies: {interactive: {breaker: {failures: 0}}}\n", "policies.interactive.breaker.failures: 0: must be at least 1 (e.g. 5) at line 1"},
	{"slow count zero", "policies: {interactive: {breaker: {slow: {count: 0}}}}\n", "policies.interactive.breaker.slow.count: 0: must be at least 1 (e.g. 3) at line 1"},
	{"unknown breaker scope", "policies: {interactive: {breaker: {scope: modle}}}\n", `policies.interactive.breaker.scope: unknown scope "modle" (did you mean model?) at line 1`},
	{"bad policy name", "policies: {\"a b\": {}}\n", `policies["a b"]: a policy name may hold only`},
	{"no policies", "policies: {}\n", "policies: none defined"},

	// Routes.
	{"route to missing provider", "routes: [{prefix: /a, provider: opnai}]\n", `routes[0].provider: provider "opnai" is not defined under providers (did you mean openai?)`},
	{"route without provider", "routes: [{prefix: /a}]\n", "routes[0].provider: missing; name one of the providers: anthropic, openai"},
	{"route to missing policy", "routes: [{prefix: /a, provider: openai, policy: fast}]\n", `routes[0].policy: policy "fast" is not defined under policies (one of: interactive, nightly)`},
	{"policies without interactive", "policies: {nightly: {}}\n", `routes[0].policy: policy "interactive" is not defined under policies (one of: nightly); add interactive: {} under policies to keep the built-in one`},
	{"fallback to missing provider", "routes: [{prefix: /a, provider: openai, fallbacks: [{provider: groq, model: m}]}]\n",
		`routes[0].fallbacks[0].provider: provider "groq" is not defined under providers`},
	{"fallback of a kind not translated", "providers: {br: {kind: bedrock, region: us-east-1}, oa: {kind: openai, base_url: 'https://api.openai.com', api_key_env: OPENAI_API_KEY}}\nroutes: [{prefix: /a, provider: br, fallbacks: [{provider: oa, model: m}]}]\n",
		`routes[0].fallbacks[0].provider: "oa" speaks the openai API but the route's provider "br" speaks bedrock; a fallback must speak the same API`},
	{"vertex fallback of another kind without its project", "routes: [{prefix: /a, provider: openai, fallbacks: [{provider: vx, model: claude-haiku-4-5}]}]\nproviders: {vx: {kind: vertex, region: us-east5}, openai: {kind: openai, base_url: 'https://api.openai.com', api_key_env: OPENAI_API_KEY}}\n",
		`routes[0].fallbacks[0].provider: "vx" (kind vertex) would take the route's openai calls translated, sent under /v1/projects/{project}/locations/{region}; set providers.vx.project and region, e.g. {project: my-project, region: us-central1}`},
	{"vertex fallback of another kind without its region", "routes: [{prefix: /a, provider: anthropic, fallbacks: [{provider: vx, model: gemini-2.0-flash}]}]\nproviders: {vx: {kind: vertex, base_url: 'https://us-east5-aiplatform.googleapis.com', project: my-project}, anthropic: {kind: anthropic, base_url: 'https://api.anthropic.com', api_key_env: ANTHROPIC_API_KEY}}\n",
		`routes[0].fallbacks[0].provider: "vx" (kind vertex) would take the route's anthropic calls translated, sent under /v1/projects/{project}/locations/{region}; set providers.vx.project and region, e.g. {project: my-project, region: us-central1}`},
	{"project of a kind with none", "providers: {oa: {kind: openai, base_url: 'https://api.openai.com', project: my-project}}\nroutes: [{prefix: /a, provider: oa}]\n",
		`providers.oa.project: kind openai has no projects; project is Vertex AI's (kind vertex), remove it`},
	{"project not one", "providers: {vx: {kind: vertex, region: us-east5, project: 'my/project'}}\nroutes: [{prefix: /a, provider: vx}]\n",
		`providers.vx.project: "my/project" is not a Google Cloud project id or number, e.g. my-project or 123456789012`},
	{"fallback without model", "routes: [{prefix: /a, provider: openai, fallbacks: [{provider: openai}]}]\n", "routes[0].fallbacks[0].model: missing"},
	{"duplicate prefix", "routes:\n  - {prefix: /a, provider: openai}\n  - {prefix: /a/, provider: anthropic}\n", `routes[1].prefix: "/a" is also the prefix of routes[0]`},
	{"prefix without slash", "routes: [{prefix: openai, provider: openai}]\n", `routes[0].prefix: "openai" must start with '/' (write "/openai")`},
	{"prefix missing", "routes: [{provider: openai}]\n", "routes[0].prefix: missing"},
	{"prefix with dot dot", "routes: [{prefix: /a/../b, provider: openai}]\n", "routes[0].prefix: \"/a/../b\" must be a clean path"},
	{"prefix with query", "routes: [{prefix: \"/a?b\", provider: openai}]\n", "routes[0].prefix: \"/a?b\" may hold only"},
	{"prefix on own endpoint", "routes: [{prefix: /metrics, provider: openai}]\n", "routes[0].prefix: \"/metrics\" is one of the gateway's own endpoints"},
	{"prefix under admin", "routes: [{prefix: /sluice/x, provider: openai}]\n", "routes[0].prefix: \"/sluice/x\" is one of the gateway's own endpoints"},
	{"prefix on the health check", "routes: [{prefix: /healthz, provider: openai}]\n", "routes[0].prefix: \"/healthz\" is one of the gateway's own endpoints"},
	{"no routes", "routes: []\n", "routes: none defined"},
	{"routes not a list", "routes: {prefix: /a}\n", "routes: must be a list, found a mapping"},
	{"route not a mapping", "routes: [/openai]\n", `routes[0]: must be a mapping of keys, found "/openai"`},
	{"retry_safe not a bool", "routes: [{prefix: /a, provider: openai, retry_safe: maybe}]\n", `routes[0].retry_safe: "maybe" is not true or false`},

	// Providers.
	{"no providers", "providers: {}\n", "providers: none defined"},
	{"providers not a mapping", "providers: [openai]\n", "providers: must be a mapping of keys, found a list"},
	{"unknown kind", "providers: {openai: {kind: openia}}\n", `providers.openai.kind: unknown kind "openia" (did you mean openai?)`},
	{"missing kind", "providers: {groq: {base_url: \"https://x\"}}\n", "providers.groq.kind: missing; set kind: openai"},
	{"missing base_url", "providers: {groq: {kind: openai}}\n", "providers.groq.base_url: missing"},
	{"azure without base_url", "providers: {az: {kind: azure}}\nroutes: [{prefix: /az, provider: az}]\n", "providers.az.base_url: missing; kind azure needs your resource's address, e.g. https://my-resource.openai.azure.com"},
	{"azure misspelt", "providers: {az: {kind: azur, base_url: \"https://r.openai.azure.com\"}}\n", `providers.az.kind: unknown kind "azur" (did you mean azure?)`},
	{"base_url scheme", "providers: {openai: {base_url: \"ftp://h\"}}\n", `providers.openai.base_url: "ftp://h" must start with https://`},
	{"base_url no scheme", "providers: {openai: {base_url: api.openai.com}}\n", `providers.openai.base_url: "api.openai.com" must start with https://`},
	{"base_url no host", "providers: {openai: {base_url: \"https://\"}}\n", "providers.openai.base_url: \"https:\" has no host"},
	{"base_url query", "providers: {openai: {base_url: \"https://h/?a=1\"}}\n", "providers.openai.base_url: \"https://h/?a=1\" must not have a query"},
	{"base_url fragment", "providers: {openai: {base_url: \"https://h#x\"}}\n", "providers.openai.base_url: \"https://h#x\" must not have a fragment"},
	{"base_url userinfo", "providers: {openai: {base_url: \"https://u:p@h\"}}\n", "providers.openai.base_url: must not hold user:password@"},
	{"bad api_key_env", "providers: {openai: {api_key_env: \"$KEY\"}}\n", `providers.openai.api_key_env: "$KEY" is not an environment variable name (write e.g. OPENAI_API_KEY) at line 1`},
	{"max_concurrent zero", "providers: {openai: {max_concurrent: 0}}\n", "providers.openai.max_concurrent: 0: must be at least 1 (default 1024) at line 1"},
	{"bad provider name", "providers: {\"a/b\": {kind: openai, base_url: \"https://h\"}}\n", `providers["a/b"]: a provider name may hold only`},
	{"injected key on open address", "listen: 0.0.0.0:8080\nproviders: {openai: {api_key_env: OPENAI_API_KEY}, anthropic: {}}\n",
		"providers.openai.api_key_env: the gateway would hand this provider's key to anyone who reaches 0.0.0.0:8080; add auth.keys or listen on 127.0.0.1"},
	{"injected key on all interfaces", "listen: \":8080\"\nproviders: {openai: {}, anthropic: {api_key_env: K}}\n",
		"providers.anthropic.api_key_env: the gateway would hand this provider's key to anyone who reaches :8080; add auth.keys or listen on 127.0.0.1"},

	// Listen, state, auth, admin, limits.
	{"listen without port", "listen: 127.0.0.1\n", `listen: "127.0.0.1" is not host:port`},
	{"listen bad port", "listen: 127.0.0.1:http\n", `listen: "127.0.0.1:http" is not host:port`},
	{"listen port too big", "listen: 127.0.0.1:70000\n", `listen: "127.0.0.1:70000" is not host:port`},
	{"unknown backend", "state: {backend: fiel}\n", `state.backend: unknown backend "fiel" (did you mean file?) at line 1`},
	{"redis without url", "state: {backend: redis}\n", "state.url: the redis backend needs a URL"},
	{"redis with http url", "state: {backend: redis, url: \"http://h:6379\"}\n", "state.url: must be a redis://, rediss:// or unix:// URL"},
	{"url without redis", "state: {backend: file, url: \"redis://h:6379\"}\n", "state.url: only the redis backend uses a URL"},
	{"state not a mapping", "state: file\n", `state: must be a mapping of keys, found "file"`},
	{"empty auth key", "auth: {keys: [\"\"]}\n", "auth.keys[0]: empty token"},
	{"auth key with space", "auth: {keys: [ok, \"a b\"]}\n", "auth.keys[1]: a token must not hold spaces"},
	{"auth key short sha", "auth: {keys: [\"sha256:abcd\"]}\n", "auth.keys[0]: sha256: must be followed by the 64 hex digits"},
	{"auth keys not a list", "auth: {keys: tok}\n", "auth.keys: must be a list"},
	{"bad admin token_env", "admin: {token_env: \"my token\"}\n", `admin.token_env: "my token" is not an environment variable name (write e.g. SLUICE_ADMIN_TOKEN) at line 1`},
	{"body size in MB", "limits: {max_body: 20MB}\n", `limits.max_body: "20MB" is not a size (write bytes, or e.g. 512KiB, 20MiB, 1GiB)`},
	{"body size zero", "limits: {max_body: 0}\n", "limits.max_body: must be more than 0"},
	{"header size zero", "limits: {max_header_bytes: 0}\n", "limits.max_header_bytes: 0 bytes: must be from 1KiB to 16MiB (write e.g. 64KiB)"},
	{"header size too large", "limits: {max_header_bytes: 1GiB}\n", "limits.max_header_bytes: 1073741824 bytes: must be from 1KiB to 16MiB"},
	{"header size not a size", "limits: {max_header_bytes: lots}\n", `limits.max_header_bytes: "lots" is not a size`},

	// Budgets and prices.
	{"budget zero limit", "budgets: [{name: d, limit_usd: 0, period: day}]\n", "budgets[0].limit_usd: must be more than 0"},
	{"budget negative limit", "budgets: [{name: d, limit_usd: -5, period: day}]\n", "budgets[0].limit_usd: must be more than 0"},
	{"budget missing limit", "budgets: [{name: d, period: day}]\n", "budgets[0].limit_usd: must be more than 0"},
	{"budget infinite limit", "budgets: [{name: d, limit_usd: .inf, period: day}]\n", `budgets[0].limit_usd: ".inf" is not a number`},
	{"budget bad period", "budgets: [{name: d, limit_usd: 5, period: week}]\n", `budgets[0].period: "week" is not day, month or a positive duration such as 6h`},
	{"budget negative period", "budgets: [{name: d, limit_usd: 5, period: -6h}]\n", `budgets[0].period: "-6h" is not day, month or a positive duration`},
	{"budget missing period", "budgets: [{name: d, limit_usd: 5}]\n", "budgets[0].period: missing"},
	{"budget bad scope", "budgets: [{name: d, limit_usd: 5, period: day, scope: team}]\n", `budgets[0].scope: unknown scope "team" (one of: all, key, model, provider)`},
	{"budget bad unpriced", "budgets: [{name: d, limit_usd: 5, period: day, unpriced: maybe}]\n", `budgets[0].unpriced: "maybe" must be allow or refuse`},
	{"budget unpriced a mapping", "budgets: [{name: d, limit_usd: 5, period: day, unpriced: {a: 1}}]\n", "budgets[0].unpriced: must be a single value, found a mapping"},
	{"budget bad on_store_error", "budgets: [{name: d, limit_usd: 5, period: day, on_store_error: retry}]\n", `budgets[0].on_store_error: "retry" must be allow or refuse`},
	{"budget without name", "budgets: [{limit_usd: 5, period: day}]\n", "budgets[0].name: missing"},
	{"budget duplicate name", "budgets: [{name: d, limit_usd: 5, period: day}, {name: d, limit_usd: 5, period: month}]\n", `budgets[1].name: "d" is also the name of budgets[0]`},
	{"price missing output", "prices: {gpt-4o-mini: {input: 0.15}}\n", "prices.gpt-4o-mini.output: missing"},
	{"price missing input", "prices: {gpt-4o-mini: {output: 0.15}}\n", "prices.gpt-4o-mini.input: missing"},
	{"price negative", "prices: {gpt-4o-mini: {input: -1, output: 1}}\n", "prices.gpt-4o-mini.input: -1: must be 0 or more"},
	{"cache price negative", "prices: {gpt-4o-mini: {input: 1, output: 1, cache_read: -0.5}}\n", "prices.gpt-4o-mini.cache_read: -0.5: must be 0 or more"},
	{"price not a number", "prices: {gpt-4o-mini: {input: cheap, output: 1}}\n", `prices.gpt-4o-mini.input: "cheap" is not a number`},
	{"price star inside", "prices: {\"gpt-*-mini\": {input: 1, output: 1}}\n", `prices["gpt-*-mini"]: '*' may only end a name`},

	// The file as a whole.
	{"syntax error", "listen: 127.0.0.1:8080\nroutes: [\n", "config: YAML syntax: "},
	{"syntax error line", "a: b\nc: d: e\n", "at line 2"},
	{"tab indent", "state:\n\tbackend: file\n", "YAML indents with spaces, not tabs"},
	{"two documents", "listen: 127.0.0.1:1\n---\nlisten: 127.0.0.1:2\n", "config: the file holds more than one YAML document (---); keep one at line 2"},
	{"top level list", "- listen\n", "config: the file must be a mapping of keys"},
	{"top level scalar", "hello\n", "config: the file must be a mapping of keys (listen:, routes:, policies:, …), found \"hello\""},
	{"complex key", "? [a]\n: b\n", "config: a key must be a plain name, found a list"},
	{"merge of a scalar", "policies: {interactive: {<<: 3}}\n", `policies.interactive: must be a mapping of keys, found "3"`},
	{"self merge", "policies:\n  interactive: &a {<<: *a}\n", "policies.interactive: a merge key (<<) includes the mapping it is part of"},
}

func TestParseRefuses(t *testing.T) {
	for _, tc := range badConfigs {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.src))
			if err == nil {
				t.Fatalf("Parse accepted it: %+v", c)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Errorf("error  %s\nwant it to contain %s", msg, tc.want)
			}
			if !strings.HasPrefix(msg, "config: ") || strings.ContainsAny(msg, "\n\r") {
				t.Errorf("error %q is not one line starting with config:", msg)
			}
		})
	}
}

// A fallback of another kind is taken when the engine translates the
// route's calls for it (sluice.Translates): an OpenAI route may fall back
// to Anthropic, and the other way; either to Azure OpenAI, and to Vertex
// AI that names its project and region (a project number too).
func TestFallbackOfATranslatedKind(t *testing.T) {
	const cloud = "providers:\n  openai: {}\n  anthropic: {}\n  az: {kind: azure, base_url: 'https://eu.openai.azure.com', api_key_env: AZ}\n" +
		"  vx: {kind: vertex, region: us-east5, project: my-project}\n  vxn: {kind: vertex, region: global, project: '123456789012'}\n"
	for _, src := range []string{
		"routes: [{prefix: /a, provider: openai, fallbacks: [{provider: anthropic, model: claude-haiku-4-5}]}]\n",
		"routes: [{prefix: /a, provider: anthropic, fallbacks: [{provider: openai, model: gpt-4o-mini}]}]\n",
		cloud + "routes: [{prefix: /a, provider: openai, fallbacks: [{provider: az, model: gpt-4o-mini-eu}]}]\n",
		cloud + "routes: [{prefix: /a, provider: anthropic, fallbacks: [{provider: az, model: gpt-4o-mini-eu}]}]\n",
		cloud + "routes: [{prefix: /a, provider: openai, fallbacks: [{provider: vx, model: claude-haiku-4-5@20251001}]}]\n",
		cloud + "routes: [{prefix: /a, provider: anthropic, fallbacks: [{provider: vxn, model: gemini-2.0-flash}]}]\n",
	} {
		c, err := Parse([]byte(src))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if fb := c.Routes[0].Fallbacks; len(fb) != 1 || c.Providers[fb[0].Provider].Kind == c.Providers[c.Routes[0].Provider].Kind {
			t.Errorf("%s: fallbacks %+v, want one of the other kind", src, fb)
		}
	}
}
