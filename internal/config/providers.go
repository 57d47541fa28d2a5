package config

import (
	"cmp"
	"errors"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"

	"github.com/sluice-llm/sluice/dialect"
)

// The providers' checks: each provider's kind, asked of package dialect,
// its region and credentials file, its address and its keys.

func (c *Config) checkProviders() error {
	if len(c.Providers) == 0 {
		return errf("providers", "none defined; add one, e.g. openai: {kind: openai, base_url: https://api.openai.com}")
	}
	return byName(c.Providers, checkProvider)
}

func checkProvider(name string, pr Provider) error {
	path := key("providers", name)
	d, ok := dialect.Lookup(pr.Kind)
	switch {
	case !nameRE.MatchString(name):
		return errf(path, "a provider name may hold only letters, digits, '_', '-' and '.'")
	case pr.Kind == "":
		return errf(key(path, "kind"), "missing; set kind: openai for any OpenAI-compatible API, or one of %s", strings.Join(dialect.Kinds(), ", "))
	case !ok:
		return errf(key(path, "kind"), "unknown kind %s%s", quote(pr.Kind), suggest(pr.Kind, dialect.Kinds()))
	}
	return cmp.Or(checkSigning(path, d, pr),
		refuse(pr.Kind == dialect.Azure.Kind() && pr.BaseURL == "", key(path, "base_url"),
			"missing; kind azure needs your resource's address, e.g. https://my-resource.openai.azure.com"),
		checkProject(key(path, "project"), pr),
		checkBaseURL(key(path, "base_url"), pr.BaseURL),
		envName(key(path, "api_key_env"), pr.APIKeyEnv, "OPENAI_API_KEY"),
		checkPool(key(path, "api_keys_env"), pr),
		atLeast1(key(path, "max_concurrent"), pr.MaxConcurrent, "default "+strconv.Itoa(DefaultMaxConcurrent)),
		checkModels(key(path, "models"), pr.Models))
}

// checkModels checks a provider's declarations of its models at p: each
// a model's name, or one that '*' ends, and no size below 0 (0 is none).
func checkModels(p string, ms map[string]ModelLimits) error {
	return byName(ms, func(model string, m ModelLimits) error {
		size := func(k string, n int64, eg string) error {
			return refuse(n < 0, key(key(p, model), k), "%d: must be at least 1 token (e.g. %s), or left out when not known", n, eg)
		}
		return cmp.Or(modelName(p, model, ", or gpt-4o* for every model that starts with gpt-4o"),
			size("context", m.Context, "128000"), size("output", m.Output, "16384"))
	})
}

// projectRE is what a Google Cloud project looks like in a path: its id
// (lower-case letters, digits and dashes; a domain-scoped one holds '.'
// and ':') or its number.
var projectRE = regexp.MustCompile(`^[a-z0-9]+([-.:][a-z0-9]+)*$`)

// checkProject checks a provider's project at p: on kind vertex only, and
// one that looks like a project.
func checkProject(p string, pr Provider) error {
	given := pr.Project != ""
	return cmp.Or(refuse(given && pr.Kind != dialect.Vertex.Kind(), p,
		"kind %s has no projects; project is Vertex AI's (kind vertex), remove it", pr.Kind),
		refuse(given && !projectRE.MatchString(pr.Project), p,
			"%s is not a Google Cloud project id or number, e.g. my-project or 123456789012", quote(pr.Project)))
}

// checkPool checks a provider's pool of keys at p: not beside api_key_env,
// names of environment variables, each once, positive weights.
func checkPool(p string, pr Provider) error {
	switch {
	case pr.APIKeys == nil:
		return nil
	case pr.APIKeyEnv != "":
		return errf(p, "given with api_key_env; keep one: api_keys_env: [%s, …] for a pool, or api_key_env alone for one key", pr.APIKeyEnv)
	case len(pr.APIKeys) == 0:
		return errf(p, "is empty; list the variables that hold the keys, e.g. [OPENAI_KEY_A, OPENAI_KEY_B], or remove it")
	}
	seen := map[string]bool{}
	return each(pr.APIKeys, func(i int, k PoolKey) error {
		ip, dup := index(p, i), seen[k.Env]
		seen[k.Env] = true
		return cmp.Or(refuse(!envNameRE.MatchString(k.Env), ip,
			"%s is not an environment variable name (write e.g. OPENAI_KEY_A or {env: OPENAI_KEY_A, weight: 2})", quote(k.Env)),
			refuse(dup, ip, "$%s is listed twice; list each key once and give it a weight instead", k.Env),
			atLeast1(key(ip, "weight"), k.Weight, "default 1"))
	})
}

// checkBaseURL checks a provider's address. It shows the address only with
// any user:password removed.
func checkBaseURL(path, s string) error {
	if s == "" {
		return errf(path, "missing; write the API's address, e.g. https://api.openai.com")
	}
	u, err := url.Parse(s)
	if err != nil {
		return errf(path, "is not a URL; write e.g. https://api.openai.com")
	}
	shown := quote(u.Redacted())
	switch {
	case u.User != nil:
		return errf(path, "must not hold user:password@; name an environment variable in api_key_env instead")
	case u.Scheme != "http" && u.Scheme != "https":
		return errf(path, "%s must start with https:// (or http://)", shown)
	case u.Opaque != "" || u.Hostname() == "":
		return errf(path, "%s has no host; write e.g. https://api.openai.com", shown)
	case u.RawQuery != "" || u.ForceQuery:
		return errf(path, "%s must not have a query (?…); the client's path and query are appended to it", shown)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return errf(path, "%s must not have a fragment (#…)", shown)
	}
	return nil
}

// checkSigning checks what only a dialect that signs its requests takes:
// a region that looks like one, a credentials file that can be read,
// neither given to a kind that carries a plain key, and the region a
// regional kind needs: Bedrock's even when base_url is given, since each
// of its requests is signed for its region.
func checkSigning(path string, d dialect.Dialect, pr Provider) error {
	_, regional := dialect.RegionalBaseURL(pr.Kind, "")
	signs := d.Traits().Signs
	rp, cp := key(path, "region"), key(path, "credentials_file")
	switch {
	case pr.Region != "" && !dialect.IsRegion(pr.Region):
		return errf(rp, "%s is not a region: lower-case letters, digits and dashes, e.g. us-east-1 or us-central1", quote(pr.Region))
	case pr.Region != "" && !signs:
		return errf(rp, "kind %s sends a key and signs nothing, so it takes no region; remove region", pr.Kind)
	case pr.Region == "" && pr.Kind == dialect.Bedrock.Kind():
		return errf(rp, "missing; kind %s signs each request for a region: write e.g. region: us-east-1, or set AWS_REGION (or the AWS profile's region)", pr.Kind)
	case pr.Region == "" && regional && pr.BaseURL == "":
		return errf(rp, "missing; kind %s needs its region (location) for its address, e.g. region: us-central1, or a base_url", pr.Kind)
	}
	if pr.CredentialsFile == "" {
		return nil
	}
	err := readable(pr.CredentialsFile)
	return cmp.Or(refuse(err != nil, cp,
		"cannot read %s: %v; give the path of a readable credentials file, or remove credentials_file for the standard credential chain",
		quote(pr.CredentialsFile), err),
		refuse(!signs, cp, "kind %s sends a key and signs nothing, so it takes no credentials file; remove credentials_file", pr.Kind))
}

// readable returns why the file at p cannot be read, nil if it can. Only
// a regular file is opened: opening a named pipe would wait for a writer.
func readable(p string) error {
	st, err := os.Stat(p)
	switch {
	case err != nil:
		return pathErr(err)
	case st.IsDir():
		return errors.New("it is a directory")
	case !st.Mode().IsRegular():
		return errors.New("it is not a regular file")
	}
	f, err := os.Open(p)
	if err != nil {
		return pathErr(err)
	}
	return f.Close()
}
