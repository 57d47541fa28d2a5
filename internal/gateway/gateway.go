package gateway

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/events"
	"github.com/sluice-llm/sluice/internal/history"
	"github.com/sluice-llm/sluice/internal/keypool"
	"github.com/sluice-llm/sluice/internal/limitstats"
	"github.com/sluice-llm/sluice/internal/scrub"
	"github.com/sluice-llm/sluice/internal/tracing"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
	"github.com/sluice-llm/sluice/state"
)

// Options are what a Gateway takes besides its config. The zero value is
// usable. They hold for the Gateway's life: a Reload keeps them.
type Options struct {
	// Store keeps breaker state. If nil, a memory store.
	Store breaker.Store

	// AttemptLog receives the attempt log. If nil, the log is not written.
	// If it has an Errors() uint64 method (a *logfile.File has), that count
	// is the metric sluice_attempt_log_errors_total.
	AttemptLog io.Writer

	// Logger receives the gateway's own messages. If nil, slog.Default().
	Logger *slog.Logger

	// Base makes the upstream attempts. If nil, one http.Transport per
	// connect timeout, shared by every route and policy and kept across
	// reloads, so open upstream connections carry over.
	Base http.RoundTripper

	// Ledger keeps spend under the config's budgets; give the one kept
	// beside Store, so that processes sharing breakers share budgets too.
	// If nil, a ledger in memory.
	Ledger spend.Ledger

	// Limits keeps the rate-limit buckets and the pauses providers ask
	// for; give the one kept beside Store, so that processes sharing
	// breakers share limits too. If nil, a store in memory.
	Limits limit.Store

	// Answers keeps the answers to requests with an Idempotency-Key; give
	// the one kept beside Store (idempotency.File, redisstore.Store), so
	// that processes sharing breakers replay each other's answers. If nil,
	// a store in memory.
	Answers idempotency.Store

	// Getenv reads the environment (injected keys, the admin token, a
	// signing provider's credentials). If nil, os.Getenv.
	Getenv func(string) string

	// Dialects finds the dialect a provider's kind names. If nil,
	// dialect.Lookup.
	Dialects func(kind string) (dialect.Dialect, bool)

	// Signers build the Signer of each provider whose dialect signs
	// (dialect.Traits.Signs), by its kind. If nil, awssign.New for
	// bedrock and googleauth.New for vertex.
	Signers map[string]func(dialect.SignerOptions) (dialect.Signer, error)
}

// Gateway is the HTTP handler of `sluice serve`. It is safe for concurrent
// use, Reload included.
//
// A Gateway value is one config's snapshot (routes, providers, policies,
// budgets, client and admin tokens), never changed once built, over what
// lasts the gateway's whole life (see shared). Each request is served by
// the snapshot current when it arrived, from its first line to its last.
type Gateway struct {
	*shared

	cfg    *config.Config
	routes []*route // longest prefix first
	// breakerNames are the breakers the routes use that are known before
	// any call (BreakerNames): listed closed while they keep no record.
	breakerNames []string
	providers    map[string]*provider
	policies     map[string]bool
	spend        *spend.Meter // nil when there are no budgets
	limiter      *limit.Limiter
	limitByKey   bool // a limit is scoped per client key
	spendByKey   bool // a budget is scoped per client key: calls name their client
	authKeys     [][sha256.Size]byte
	secrets      *scrub.Keys   // the injected keys, scrubbed from answers
	pools        keypool.Pools // the providers' pools of keys
	adminToken   string
}

// breakerPollEvery is how often the operator events' refresh reads the
// breaker records, to notice the transitions other processes make.
var breakerPollEvery = time.Second

// shared is what a reload keeps: the breaker store, the ledger and the
// limits' store (so breaker state, spend, rate-limit buckets and calls in
// flight carry over), the attempt log, the metrics, the upstream
// connections, and each provider's retry budget.
type shared struct {
	current  atomic.Pointer[Gateway]
	reloadMu sync.Mutex // one Reload at a time

	store   breaker.Store
	ledger  spend.Ledger
	limits  limit.Store
	log     *sluice.AttemptLog
	logger  *slog.Logger
	events  *events.Log // operator events on logger (package events)
	metrics *metrics
	answers *answers // kept per Idempotency-Key (remember.go)
	// history is the status page's last hour (package history).
	history *history.History
	// limitMetrics count the rate limiter's waits and refusals.
	limitMetrics *limitstats.Metrics
	// limitErrors counts the failures of the limits store.
	limitErrors atomic.Uint64
	getenv      func(string) string
	dialects    func(string) (dialect.Dialect, bool) // Options.Dialects
	base        http.RoundTripper                    // Options.Base
	tracing     *tracing.Tracing                     // nil when tracing is off

	// signers are Options.Signers.
	signers map[string]func(dialect.SignerOptions) (dialect.Signer, error)

	mu        sync.Mutex
	upstreams map[time.Duration]*http.Transport // by connect timeout
	budgets   map[string]*sluice.RetryBudget    // retry budgets, by provider name

	abort     context.Context // cancelled by Abort: in-flight calls end now
	abortFunc context.CancelFunc
	inflight  atomic.Int64
}

// route forwards requests under prefix to a provider.
type route struct {
	prefix    string
	provider  *provider
	policy    string
	retrySafe bool
	// transports by policy name: every policy may be chosen per request.
	transports map[string]*sluice.Transport
}

// New returns a Gateway for a validated config.
func New(cfg *config.Config, opt Options) (*Gateway, error) {
	sh := &shared{
		store:     opt.Store,
		ledger:    opt.Ledger,
		limits:    opt.Limits,
		log:       sluice.NewAttemptLog(opt.AttemptLog),
		logger:    opt.Logger,
		getenv:    opt.Getenv,
		dialects:  opt.Dialects,
		signers:   opt.Signers,
		base:      opt.Base,
		upstreams: make(map[time.Duration]*http.Transport),
		budgets:   make(map[string]*sluice.RetryBudget),
	}
	if sh.getenv == nil {
		sh.getenv = os.Getenv
	}
	if sh.dialects == nil {
		sh.dialects = dialect.Lookup
	}
	if sh.signers == nil {
		sh.signers = signers
	}
	if sh.store == nil {
		sh.store = breaker.NewMemory()
	}
	if sh.logger == nil {
		sh.logger = slog.Default()
	}
	if sh.ledger == nil {
		sh.ledger = spend.NewLedger(state.NewMemory())
	}
	if sh.limits == nil {
		sh.limits = limit.NewMemory()
	}
	tr, err := newTracing(cfg.Tracing, sh.getenv)
	if err != nil {
		return nil, err
	}
	sh.tracing = tr
	sh.abort, sh.abortFunc = context.WithCancel(context.Background())
	sh.events = events.New(sh.logger)
	sh.metrics = newMetrics(sh.store, sh.knownBreakers, opt.AttemptLog)
	sh.history = history.New()
	answerStore := opt.Answers
	if answerStore == nil {
		answerStore = &idempotency.Memory{}
	}
	sh.answers = newAnswers(answerStore, sh.metrics.registry)
	sh.limitMetrics = limitstats.NewMetrics(sh.metrics.registry, func() *limit.Limiter {
		if g := sh.current.Load(); g != nil {
			return g.limiter
		}
		return nil
	}, func() []*limit.Limiter {
		if g := sh.current.Load(); g != nil {
			return g.pacers()
		}
		return nil
	})
	g, err := sh.build(cfg)
	if err != nil {
		sh.shutdownTracing()
		return nil, err
	}
	sh.current.Store(g)
	var degraded func() bool
	if d, ok := sh.store.(degradable); ok {
		degraded = d.Degraded
	}
	sh.events.Start(breakerPollEvery, func() (map[string]breaker.Record, error) {
		return records(sh.store, sh.knownBreakers())
	}, degraded)
	sh.metrics.registry.MustRegister(&spendCollector{spend: sh.currentSpend, ledger: sh.ledger, events: sh.events},
		&keysCollector{pools: func() keypool.Pools { return sh.current.Load().pools }})
	return g, nil
}

// build returns the snapshot of a config over sh. It fails when the config
// names what the environment does not hold (an empty key variable, say).
func (sh *shared) build(cfg *config.Config) (*Gateway, error) {
	g := &Gateway{
		shared:       sh,
		cfg:          cfg,
		breakerNames: BreakerNames(cfg),
		providers:    make(map[string]*provider),
		policies:     make(map[string]bool),
		spend:        newSpend(cfg, sh.ledger),
		limiter:      newLimiter(cfg, sh.limits),
		limitByKey:   hasKeyScope(cfg),
	}
	g.limiter.OnError = sh.limitStoreError
	g.spendByKey = g.spend != nil && scopedByKey(cfg.Budgets)
	for name := range cfg.Policies {
		g.policies[name] = true
	}
	for name, p := range cfg.Providers {
		pv, err := sh.newProvider(name, p)
		if err != nil {
			return nil, err
		}
		pv.budget = sh.retryBudgetOf(name)
		g.providers[name] = pv
	}
	pools, err := keypool.New(cfg.Providers, sh.getenv, sh.limits, keyEvents(sh.events))
	if err != nil {
		return nil, err
	}
	g.pools = pools
	for name := range pools {
		g.providers[name].pool = true
	}
	g.secrets = providerSecrets(g.providers, pools.Secrets()...)
	for _, r := range cfg.Routes {
		rt := &route{prefix: r.Prefix, provider: g.providers[r.Provider], policy: r.Policy,
			retrySafe: r.RetrySafe, transports: make(map[string]*sluice.Transport)}
		if rt.provider == nil {
			return nil, fmt.Errorf("gateway: route %s names provider %q, which is not configured", r.Prefix, r.Provider)
		}
		targets, err := g.fallbacks(r)
		if err != nil {
			return nil, err
		}
		for name, pol := range cfg.Policies {
			rt.transports[name] = g.transport(rt, pol)
			rt.transports[name].Fallbacks = targets
		}
		g.routes = append(g.routes, rt)
	}
	sort.SliceStable(g.routes, func(i, j int) bool { return len(g.routes[i].prefix) > len(g.routes[j].prefix) })
	for _, k := range cfg.Auth.Keys {
		g.authKeys = append(g.authKeys, keyDigest(k))
	}
	if cfg.Admin.TokenEnv != "" {
		g.adminToken = sh.getenv(cfg.Admin.TokenEnv)
		if g.adminToken == "" {
			return nil, fmt.Errorf("gateway: admin.token_env names $%s, which is empty (set it, or remove admin.token_env)", cfg.Admin.TokenEnv)
		}
	}
	return g, nil
}

// retryBudgetOf returns the retry budget of the provider called name.
func (sh *shared) retryBudgetOf(name string) *sluice.RetryBudget {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	b := sh.budgets[name]
	if b == nil {
		b = new(sluice.RetryBudget)
		sh.budgets[name] = b
	}
	return b
}

// upstream returns the Base of a Transport under pol: Options.Base, else
// the shared http.Transport for pol's connect timeout.
func (sh *shared) upstream(pol sluice.Policy) http.RoundTripper {
	if sh.base != nil {
		return sh.base
	}
	connect := pol.WithDefaults().Timeout.Connect
	sh.mu.Lock()
	defer sh.mu.Unlock()
	t := sh.upstreams[connect]
	if t == nil {
		t = sluice.NewBase(connect)
		sh.upstreams[connect] = t
	}
	return t
}

func (sh *shared) currentSpend() *spend.Meter { return sh.current.Load().spend }

// transport returns the Transport of a route under one policy. All share
// the gateway's breaker store and their provider's retry budget, so a
// provider's breaker and budget are one whatever the route, the policy
// and the reload.
func (g *Gateway) transport(rt *route, pol sluice.Policy) *sluice.Transport {
	pol.Breaker.OnStateChange = g.events.BreakerChanged // transitions logged (package events)
	t := &sluice.Transport{
		Base:        g.upstream(pol),
		Policy:      pol,
		Provider:    rt.provider.name,
		Store:       g.store,
		RetryBudget: rt.provider.budget,
		Dialect:     rt.provider.d,
		Signer:      rt.provider.signer,
		Models:      rt.provider.models,
		Log:         g.log,
		Observe:     g.observer(rt, &pol),
		// A JSON answer is read whole inside its attempt: a stall or cut is
		// retried, or answered with the gateway's own error, never relayed
		// as an empty reply.
		BufferBody: true,
	}
	if g.spend != nil {
		t.Meter = g.spend
	}
	if idem := g.cfg.Idempotency; idem.Enabled {
		t.Answers, t.AnswerTTL, t.AnswerMax, t.AnswerScope = g.answers.store, idem.TTL, idem.MaxAnswer, rt.prefix
	}
	t.Limiter = g.limiter
	if len(g.pools) > 0 {
		t.Keys = g.pools
	}
	if rt.retrySafe {
		t.RetrySafe = func(*http.Request) bool { return true }
	}
	if g.tracing != nil {
		t.Tracer = g.tracing.Attempts(rt.provider.d)
	}
	return t
}

// Abort ends every call still in flight: streams get an error event.
// Call it when the drain period is over.
func (g *Gateway) Abort() { g.abortFunc() }

// InFlight returns the number of calls being served.
func (g *Gateway) InFlight() int64 { return g.inflight.Load() }

// Close releases the gateway's idle upstream connections.
func (g *Gateway) Close() error {
	g.abortFunc()
	g.events.Stop()
	for _, rt := range g.current.Load().routes {
		for _, t := range rt.transports {
			t.CloseIdleConnections()
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, t := range g.upstreams {
		t.CloseIdleConnections()
	}
	terr := g.shutdownTracing()             // the spans not yet exported
	return errors.Join(g.log.Flush(), terr) // and the refusals folded and not yet written
}

// Config returns the config the gateway serves new requests with: the
// last one New or Reload accepted.
func (g *Gateway) Config() *config.Config { return g.current.Load().cfg }

// Store returns the breaker store.
func (g *Gateway) Store() breaker.Store { return g.store }

// errAborted ends the calls still in flight when the drain is over. It is
// a cancellation, so the breaker does not count it against the provider.
var errAborted = fmt.Errorf("gateway: shutting down: %w", context.Canceled)
