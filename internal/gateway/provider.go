package gateway

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/awssign"
	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/dialect/googleauth"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/scrub"
)

// signers build the Signer of a provider whose dialect signs
// (dialect.Traits.Signs), by its kind: Options.Signers' default.
var signers = map[string]func(dialect.SignerOptions) (dialect.Signer, error){
	dialect.Bedrock.Kind(): awssign.New,
	dialect.Vertex.Kind():  googleauth.New,
}

// provider is one upstream API.
type provider struct {
	name string
	d    dialect.Dialect // the API it speaks
	base *url.URL
	key  string // injected key, "" to pass the client's through
	pool bool   // a pool of keys is injected instead (keys.go)
	// signer signs the requests with the gateway's own credentials, for a
	// dialect that signs (dialect.Traits.Signs); nil for one that takes a
	// key.
	signer dialect.Signer
	// models are what its models can take (providers.X.models); nil when
	// none is declared.
	models []sluice.ModelLimits
	// budget caps the retries to the provider from every route and policy,
	// across reloads.
	budget *sluice.RetryBudget
	// under is the path a translated request's endpoint goes under, after
	// the base path: a Vertex AI provider's project and location
	// (/v1/projects/{project}/locations/{region}); "" for any other kind,
	// or a Vertex AI provider that names no project.
	under string
}

// newProvider returns the provider called name: its dialect, its base
// URL, its injected key, and the Signer of a dialect that signs, built
// once for the snapshot's every call.
func (sh *shared) newProvider(name string, p config.Provider) (*provider, error) {
	u, err := url.Parse(p.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("gateway: providers.%s.base_url: %v", name, err)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	d, ok := sh.dialects(p.Kind)
	if !ok {
		return nil, fmt.Errorf("gateway: providers.%s.kind: %q is no dialect Sluice speaks", name, p.Kind)
	}
	pv := &provider{name: name, d: d, base: u}
	if p.Project != "" && p.Region != "" {
		pv.under = "/v1/projects/" + p.Project + "/locations/" + p.Region
	}
	if d.Traits().Signs {
		newSigner, ok := sh.signers[p.Kind]
		if !ok {
			return nil, fmt.Errorf("gateway: providers.%s: kind %s signs its requests, and no signer is given for it", name, p.Kind)
		}
		o := dialect.SignerOptions{Region: p.Region, CredentialsFile: p.CredentialsFile, Getenv: sh.getenv}
		if pv.signer, err = newSigner(o); err != nil {
			return nil, fmt.Errorf("gateway: providers.%s: the credentials to sign with: %w", name, err)
		}
	}
	if p.APIKeyEnv != "" {
		pv.key = sh.getenv(p.APIKeyEnv)
		if pv.key == "" {
			return nil, fmt.Errorf("gateway: providers.%s.api_key_env names $%s, which is empty (export the key, or remove api_key_env to pass clients' keys through)", name, p.APIKeyEnv)
		}
	}
	pv.models = modelLimits(p.Models)
	return pv, nil
}

// modelLimits returns a provider's declarations of its models as the
// engine reads them, by name; nil when there are none.
func modelLimits(ms map[string]config.ModelLimits) []sluice.ModelLimits {
	var out []sluice.ModelLimits
	for _, name := range slices.Sorted(maps.Keys(ms)) {
		m := ms[name]
		l := sluice.ModelLimits{Model: name, Context: m.Context, Output: m.Output}
		for _, c := range []struct {
			takes bool
			f     chat.Feature
		}{{m.Tools, chat.FeatureTools}, {m.Images, chat.FeatureImages}, {m.JSONSchema, chat.FeatureJSONSchema}} {
			if !c.takes {
				l.Lacks = append(l.Lacks, c.f)
			}
		}
		out = append(out, l)
	}
	return out
}

// fallbacks returns a route's fallback targets. A fallback on another host
// must inject its own key: the clients' keys are for the primary. A
// fallback of another kind is translated (sluice.Target.Dialect) where
// the engine translates the pair (sluice.Translates), else refused: it
// must inject its own key, use a pool or sign, wherever it is, and the
// request goes to its dialect's endpoint under its base URL (Vertex AI's
// under its project's location too, which it must name).
func (g *Gateway) fallbacks(r config.Route) ([]sluice.Target, error) {
	from := g.providers[r.Provider]
	var out []sluice.Target
	for i, f := range r.Fallbacks {
		to := g.providers[f.Provider]
		if to == nil {
			return nil, fmt.Errorf("gateway: route %s: fallbacks[%d] names provider %q, which is not configured", r.Prefix, i, f.Provider)
		}
		if to.d != from.d && !sluice.Translates(from.d, to.d) { // the dialects themselves, stateless comparable values, not their names
			return nil, fmt.Errorf("gateway: route %s: fallbacks[%d]: provider %s speaks %s, not %s like %s", r.Prefix, i, to.name, to.d.Kind(), from.d.Kind(), from.name)
		}
		if to.d != from.d {
			if to.key == "" && !to.pool && to.signer == nil {
				return nil, fmt.Errorf("gateway: route %s: fallbacks[%d]: provider %s speaks %s, not %s like %s, and would receive the clients' keys for %s; set providers.%s.api_key_env",
					r.Prefix, i, to.name, to.d.Kind(), from.d.Kind(), from.name, from.name, to.name)
			}
			if to.d == dialect.Vertex && to.under == "" {
				return nil, fmt.Errorf("gateway: route %s: fallbacks[%d]: provider %s speaks vertex, whose calls go under /v1/projects/{project}/locations/{region}; set providers.%s.project and region",
					r.Prefix, i, to.name, to.name)
			}
			out = append(out, sluice.Target{Provider: to.name, Model: f.Model, Rewrite: to.rewriteTranslated(),
				RetryBudget: to.budget, Signer: to.signer, Dialect: to.d})
			continue
		}
		if to.key == "" && !to.pool && to.signer == nil && to.base.Host != from.base.Host {
			return nil, fmt.Errorf("gateway: route %s: fallbacks[%d]: provider %s would receive the clients' keys for %s; set providers.%s.api_key_env", r.Prefix, i, to.name, from.name, to.name)
		}
		out = append(out, sluice.Target{Provider: to.name, Model: f.Model, Rewrite: to.rewriteFrom(from),
			RetryBudget: to.budget, Signer: to.signer})
	}
	for i := range out { // each target carries what its provider declares of its models, whatever its dialect
		out[i].Models = g.providers[out[i].Provider].models
	}
	return out, nil
}

// rewriteTranslated returns the Rewrite of a fallback of another dialect:
// the engine has set the path of p's dialect's endpoint, which goes under
// p's base URL (and, for Vertex AI, its project's location: p.under),
// with p's key in its dialect's header (Azure's api-key, …; every
// credential the request carried dropped), or none when p signs or a
// pool's key is put on later.
func (p *provider) rewriteTranslated() func(*http.Request) {
	return func(r *http.Request) {
		u := *p.base
		u.Path = p.base.Path + p.under + r.URL.Path
		if r.URL.RawPath != "" {
			u.RawPath = p.base.EscapedPath() + p.under + r.URL.RawPath
		}
		u.RawQuery = r.URL.RawQuery
		r.URL, r.Host = &u, u.Host
		p.d.Client().SetKey(r, p.key)
	}
}

// rewriteFrom returns the Rewrite that sends a request built for provider
// from to p instead: p's base URL, and p's key when it injects one (every
// credential the request carried dropped, a key in the query too), or
// none when p signs. (The engine puts the fallback's model in the body,
// or in the path where the dialect names it there, and signs.)
func (p *provider) rewriteFrom(from *provider) func(*http.Request) {
	return func(r *http.Request) {
		u := *p.base
		u.Path = p.base.Path + strings.TrimPrefix(r.URL.Path, from.base.Path)
		u.RawQuery = r.URL.RawQuery
		r.URL, r.Host = &u, u.Host
		if p.key != "" || p.signer != nil {
			p.d.Client().SetKey(r, p.key) // the client's key is not for this provider
		}
	}
}

// providerSecrets returns the set of the providers' injected keys, and
// the pools' keys given: what answers are scrubbed of.
func providerSecrets(providers map[string]*provider, pooled ...string) *scrub.Keys {
	keys := pooled
	for _, p := range providers {
		keys = append(keys, p.key)
	}
	return scrub.New(keys...)
}
