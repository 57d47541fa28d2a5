package config

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// Config is the whole configuration of the gateway: CONFIG.md gives each
// key's default and meaning. Parse and Load fill it over Default; a Config
// built by hand should start from Default too, since Validate refuses the
// zero values that Parse never leaves.
type Config struct {
	// Listen is the address the gateway serves on, host:port.
	// Default 127.0.0.1:8080.
	Listen string `yaml:"listen"`

	// Drain is how long in-flight calls may run on after SIGTERM or
	// SIGINT. Default the longest total of the policies (LongestTotal),
	// so that a stop cuts no call; 0 stops at once.
	Drain time.Duration `yaml:"drain"`

	// State says where breaker and budget state lives.
	State State `yaml:"state"`

	// Log says where the attempt log goes.
	Log Log `yaml:"log"`

	// Auth lists the client tokens the gateway accepts.
	Auth Auth `yaml:"auth"`

	// Admin guards the admin endpoints.
	Admin Admin `yaml:"admin"`

	// Providers are the upstream APIs, by name.
	Providers map[string]Provider `yaml:"providers"`

	// Routes map path prefixes to providers, in the order written.
	Routes []Route `yaml:"routes"`

	// Policies are the named policies. Parse sets each one's Name to its
	// key and its Breaker.Lease to its total timeout.
	Policies map[string]sluice.Policy `yaml:"policies"`

	// Budgets are the spend caps. Parse presets each Scope to "all".
	Budgets []spend.Budget `yaml:"budgets"`

	// Prices are USD per million tokens, by model ('*' ends a prefix).
	Prices spend.Prices `yaml:"prices"`

	// Limits bound what a client may send.
	Limits Limits `yaml:"limits"`

	// Tracing says where OpenTelemetry traces go.
	Tracing Tracing `yaml:"tracing"`

	// Idempotency says how answers are kept per Idempotency-Key.
	Idempotency Idempotency `yaml:"idempotency"`
}

// State says where shared state (breakers, budgets) lives.
type State struct {
	// Backend is memory, file or redis. Default file.
	Backend string `yaml:"backend"`

	// Dir is the state directory. If empty, see Config.StateDir.
	Dir string `yaml:"dir"`

	// URL is the Redis URL of the redis backend in mode single.
	URL string `yaml:"url"`

	// Redis says how to reach Redis beyond one server.
	Redis Redis `yaml:"redis"`
}

// The state backends.
const (
	BackendMemory = "memory"
	BackendFile   = "file"
	BackendRedis  = "redis"
)

// Log says where the attempt log goes.
type Log struct {
	// Attempts is the JSONL file of attempts. If empty, see
	// Config.AttemptsPath.
	Attempts string `yaml:"attempts"`
}

// Auth lists the client tokens the gateway accepts.
type Auth struct {
	// Keys are the client tokens, each the token or sha256:<hex of its
	// SHA-256>. If empty, clients are not authenticated.
	Keys []string `yaml:"keys"`
}

// Admin guards the admin endpoints (/sluice/...).
type Admin struct {
	// TokenEnv names the variable holding the admin token. Default none.
	TokenEnv string `yaml:"token_env"`
}

// Provider is one upstream API.
type Provider struct {
	// Kind is the API dialect, one of dialect.Kinds.
	Kind string `yaml:"kind"`

	// BaseURL is where requests go. Parse drops a trailing slash, and
	// makes a missing one of a regional kind from Region.
	BaseURL string `yaml:"base_url"`

	// APIKeyEnv names the variable of the key the gateway injects. If
	// empty, the client's own key is passed through.
	APIKeyEnv string `yaml:"api_key_env"`

	// APIKeys is a pool of keys injected instead of one, by weighted
	// round robin. Default none.
	APIKeys []PoolKey `yaml:"api_keys_env"`

	// MaxConcurrent caps the calls in flight to the provider, across the
	// processes sharing the state. Default DefaultMaxConcurrent.
	MaxConcurrent int `yaml:"max_concurrent"`

	// Region is the region of a dialect that signs (us-east-1). If empty,
	// Parse takes bedrock's from the standard AWS chain.
	Region string `yaml:"region"`

	// Project is a Vertex AI provider's Google Cloud project, for the
	// calls of another kind translated for it. Default none.
	Project string `yaml:"project"`

	// CredentialsFile is a file of credentials for a dialect that signs.
	// If empty, the standard chain.
	CredentialsFile string `yaml:"credentials_file"`

	// Models says what some of the provider's models can take
	// (sluice.Transport.Models), by model ('*' ends a prefix). Default none.
	Models map[string]ModelLimits `yaml:"models"`
}

// ModelLimits is what one of a provider's models can take.
type ModelLimits struct {
	// Context is its context window, Output its most output tokens. If
	// zero, not declared.
	Context int64 `yaml:"context,tokens"`
	Output  int64 `yaml:"output,tokens"`

	// Tools, Images and JSONSchema say what it takes. Default true.
	Tools      bool `yaml:"tools"`
	Images     bool `yaml:"images"`
	JSONSchema bool `yaml:"json_schema"`
}

// PoolKey is one key of a provider's pool.
type PoolKey struct {
	// Env names the environment variable that holds the key.
	Env string `yaml:"env,alone"`

	// Weight is the key's share of the calls against the pool's others.
	// Default 1.
	Weight int `yaml:"weight"`
}

// MaxConcurrentLimit is the name of the limit each provider's
// MaxConcurrent makes, in logs, errors and metrics.
const MaxConcurrentLimit = "max_concurrent"

// DefaultMaxConcurrent is the default Provider.MaxConcurrent. A call holds
// its slot for as long as its answer runs, so the default is sized for
// streams, not for short calls: a thousand agents streaming minute-long
// answers at once all fit, and only beyond that do calls wait their turn.
// It bounds what the box spends on calls in flight (two sockets and a relay
// buffer each), not the provider, whose own limits are rates.
const DefaultMaxConcurrent = 1024

// Route forwards every request under Prefix to Provider, with the prefix
// stripped.
type Route struct {
	// Prefix is the path prefix, starting with '/'. Parse drops a trailing
	// slash.
	Prefix string `yaml:"prefix"`

	// Provider names the provider that answers.
	Provider string `yaml:"provider"`

	// Policy names the policy the calls run under. Default interactive.
	Policy string `yaml:"policy"`

	// Fallbacks are tried in order when the provider cannot answer.
	Fallbacks []Target `yaml:"fallbacks"`

	// RetrySafe marks every request of the route as safe to retry even
	// without an Idempotency-Key header. Default true (LLM calls are).
	RetrySafe bool `yaml:"retry_safe"`
}

// Target is a fallback: another provider (of the route's kind, or of one
// its calls are translated for) and the model the request's "model" is
// rewritten to.
type Target struct {
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
}

// Limits bound what a client may send, and the rates its calls queue
// under.
type Limits struct {
	// Rates are the rate limits calls queue under, per minute. Parse
	// presets each Scope to "provider".
	Rates []limit.Limit `yaml:"rates"`

	// MaxBodyBytes caps a request body (413). Default 20 MiB.
	MaxBodyBytes int64 `yaml:"max_body,size"`

	// ReadHeaderTimeout bounds the reading of a request's headers.
	// Default 10s.
	ReadHeaderTimeout time.Duration `yaml:"read_header_timeout"`

	// MaxHeaderBytes caps a request's headers (431). Go's server allows
	// 4 KiB of slack above it. Default 64 KiB.
	MaxHeaderBytes int64 `yaml:"max_header_bytes,size"`

	// PromoteAfter is how long a batch call waits for a slot before it is
	// admitted as interactive. Default 30s.
	PromoteAfter time.Duration `yaml:"promote_after"`
}

// Default returns the built-in configuration: the one `sluice serve` runs
// with when given no config file.
func Default() *Config {
	c := &Config{
		Listen:    "127.0.0.1:8080",
		State:     State{Backend: BackendFile},
		Auth:      Auth{Keys: []string{}},
		Providers: defaultProviders(),
		Routes: []Route{
			{Prefix: "/openai", Provider: "openai", Policy: "interactive", RetrySafe: true},
			{Prefix: "/anthropic", Provider: "anthropic", Policy: "interactive", RetrySafe: true},
		},
		Policies: map[string]sluice.Policy{
			"interactive": sluice.Interactive(),
			"nightly":     sluice.Nightly(),
		},
		Budgets:     []spend.Budget{},
		Prices:      spend.Prices{},
		Limits:      Limits{Rates: []limit.Limit{}, MaxBodyBytes: 20 << 20, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10, PromoteAfter: 30 * time.Second},
		Tracing:     Tracing{SampleRatio: 1},
		Idempotency: Idempotency{Enabled: true, TTL: 24 * time.Hour, MaxAnswer: 8 << 20, MaxBytes: 512 << 20, FinishOnDisconnect: true},
	}
	c.Drain, _ = c.LongestTotal()
	return c
}

// LongestTotal returns the longest total among c's policies, defaults
// filled in, and the name of the policy that has it (the first by name of
// those that tie; "" when c has no policy): the longest a call or stream
// may run, and so the default drain.
func (c *Config) LongestTotal() (time.Duration, string) {
	longest, name := time.Duration(0), ""
	for _, n := range slices.Sorted(maps.Keys(c.Policies)) {
		if t := c.Policies[n].WithDefaults().Timeout.Total; t > longest {
			longest, name = t, n
		}
	}
	return longest, name
}

// EnvConfig is the environment variable that names the config file when no
// --config flag is given.
const EnvConfig = "SLUICE_CONFIG"

// maxFileSize caps a config file; real ones are a few kilobytes.
const maxFileSize = 4 << 20

// Load reads and parses the config file at path. An empty path gives the
// built-in defaults. Errors name the file and line.
func Load(path string) (*Config, error) {
	if path == "" {
		return Default(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %v (check --config or $%s)", err, EnvConfig)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1)) // Parse refuses more
	if err != nil {
		return nil, fmt.Errorf("config: read %s: %v", path, err)
	}
	c, err := Parse(data)
	var ce *Error
	if errors.As(err, &ce) {
		ce.File = path
	}
	return c, err
}

// StateDir returns the state directory: State.Dir when set (a leading ~/
// is the home directory), else $XDG_STATE_HOME/sluice when that is an
// absolute path, else ~/.local/state/sluice.
func (c *Config) StateDir() (string, error) {
	if c.State.Dir != "" {
		return expandHome(c.State.Dir, "state.dir")
	}
	if x := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "sluice"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errf("state.dir", "no home directory to keep state in; set state.dir")
	}
	return filepath.Join(home, ".local", "state", "sluice"), nil
}

// AttemptsPath returns the attempt log's path: Log.Attempts when set (a
// leading ~/ is the home directory), "-" for standard output, else
// attempts.jsonl in the state directory.
func (c *Config) AttemptsPath() (string, error) {
	if c.Log.Attempts != "" {
		return expandHome(c.Log.Attempts, "log.attempts") // "-" has no ~ to expand
	}
	dir, err := c.StateDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "attempts.jsonl"), nil
}

func expandHome(p, key string) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return "", errf(key, "no home directory to expand ~ in; write an absolute path")
	}
	return filepath.Join(home, strings.TrimPrefix(p[1:], "/")), nil
}
