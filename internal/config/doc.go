// Package config reads the YAML config of the gateway (sluice serve) into
// a typed Config, fills in the defaults, refuses mistakes with one clear
// line, and reckons how long a call can take at worst.
//
// # Which file
//
// `sluice serve --config FILE` reads FILE; without the flag, the file named
// by $SLUICE_CONFIG; without either, the built-in defaults (Default).
// Locate gives that order, Load reads the file and Parse parses bytes.
//
// # How the file combines with the defaults
//
// A key the file gives replaces its default; a key it leaves out keeps it.
// A key with no value (null) is the same as a key left out. The providers,
// routes, policies, budgets and prices sections hold the operator's own
// entries: a file that has one of these sections replaces the built-in
// section as a whole. Two kinds of entries take what they leave out from a
// built-in one:
//
//   - a policy, from the built-in policy of the same name (nightly), or
//     from interactive for any other name;
//   - a provider named openai or anthropic, from the built-in provider of
//     that name; a provider named gemini, from the gemini preset (kind
//     gemini, base_url https://generativelanguage.googleapis.com), which is
//     not in the defaults: it needs a route to be used.
//
// So this keeps both built-in policies and changes one number of nightly:
//
//	policies:
//	  interactive:
//	  nightly: {retry: {max_attempts: 8}}
//
// Durations are Go durations: 400ms, 30s, 1m30s, 2h. Sizes are bytes, or a
// whole number of KiB, MiB or GiB (20MiB). YAML anchors, aliases and merge
// keys (<<) work as usual.
//
// # Keys
//
// The default is in brackets; "a / b" gives the defaults of the
// interactive and nightly policies. Each key is one field of Config or of
// a type it holds, named by its yaml tag (an engine type's field, by its
// name in snake_case): a new key is that field, and its line here, which
// a test requires.
//
//	listen                      [127.0.0.1:8080] host:port to serve on; :8080 is every interface
//	drain                       [the longest total of the policies: 10m with the built-in
//	                            nightly] how long in-flight calls and streams may finish after
//	                            SIGTERM or SIGINT; the gateway exits as soon as the last one
//	                            ends, so only a stop while such a long call is in flight
//	                            waits that long; 0s stops at once. Shorter than a policy's
//	                            total, a stop may cut that policy's calls (sluice check
//	                            warns), and the client's retry pays again. A systemd unit's
//	                            TimeoutStopSec must exceed drain (sluice check: drain + 10s)
//	state.backend               [file] memory (one process), file (the processes of one host)
//	                            or redis (many hosts)
//	state.dir                   [""] state directory; "" is $XDG_STATE_HOME/sluice, else
//	                            ~/.local/state/sluice
//	state.url                   [""] Redis URL, redis://, rediss:// or unix://; required by redis
//	                            in mode single, refused otherwise
//	state.redis.mode            [single] single (one server at state.url), sentinel (a master
//	                            watched by Sentinel) or cluster (a Redis Cluster)
//	state.redis.addrs           [[]] the sentinels (sentinel) or seed nodes (cluster), host:port;
//	                            required by those modes
//	state.redis.master          [""] the master's name among the sentinels; required by sentinel
//	state.redis.username        [""] ACL user; "" is Redis's default user
//	state.redis.password_env    [""] environment variable holding the Redis password (never the
//	                            password itself); set but unset or empty refuses to start
//	state.redis.tls             [none] TLS to Redis (rediss:// turns it on too): {ca_file,
//	                            cert_file, key_file}, PEM files; cert and key both or neither
//	log.attempts                [""] attempt log (JSONL); "" is <state dir>/attempts.jsonl,
//	                            "-" is standard output
//	auth.keys                   [[]] client tokens, each the token or sha256:<64 hex digits of its
//	                            SHA-256>; empty means no client auth
//	admin.token_env             [""] environment variable holding the admin token, which the
//	                            admin endpoints require off loopback
//	limits.max_body             [20MiB] largest request body; a larger one gets 413
//	limits.read_header_timeout  [10s] time allowed to read a request's headers
//	limits.max_header_bytes     [64KiB] largest request headers; larger ones get 431
//	limits.rates                [none] rate limits every process sharing the state stays
//	                            under, a list of {name, provider, scope, requests_per_minute,
//	                            tokens_per_minute, concurrent}: provider "" covers every
//	                            provider; concurrent caps the calls in flight; scope
//	                            provider (default), model, key (each client) or all; a call over
//	                            a limit waits for its slot (at most its policy's max_queue), then
//	                            gets 429 rate_limited; reserve [0] (a share, 20% or 0.2) is
//	                            what batch calls may never take of the limit
//	limits.promote_after        [30s] a batch call that has waited this long for a slot is
//	                            admitted as interactive (waiting interactive calls go first)
//	idempotency.enabled         [true] keep each answer to a request with an Idempotency-Key
//	                            and replay it to a duplicate (same route, caller, key, body)
//	idempotency.ttl             [24h] how long an answer is kept
//	idempotency.max_answer      [8MiB] a larger answer is relayed, not kept
//	idempotency.max_bytes       [512MiB] kept answers together; the oldest go first
//	idempotency.finish_on_disconnect [true] a call with a key whose client leaves is
//	                            finished (within total) and its answer kept
//	tracing.enabled             [false] OpenTelemetry traces: a span per call, continuing the
//	                            caller's W3C traceparent, a child span per upstream attempt,
//	                            whose traceparent goes upstream; exported over OTLP/HTTP
//	tracing.endpoint            [""] OTLP/HTTP traces URL (http://127.0.0.1:4318/v1/traces);
//	                            "" follows OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else
//	                            OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318
//	tracing.sample_ratio        [1] share of new traces recorded, 0 to 1; a caller's
//	                            traceparent's sampled flag decides for its calls
//	tracing.service_name        [""] service.name; "" is OTEL_SERVICE_NAME, else sluice
//
// providers.NAME, an upstream API [openai: https://api.openai.com and
// anthropic: https://api.anthropic.com]:
//
//	kind            the API dialect, one of package dialect's (dialect.Kinds): openai (any
//	                OpenAI-compatible API), azure (Azure OpenAI: base_url
//	                https://{resource}.openai.azure.com required), anthropic, gemini
//	                (Google's Gemini API), and the dialects that sign their requests,
//	                bedrock (AWS Bedrock Runtime, SigV4) and vertex (Google Vertex
//	                AI, OAuth2 tokens); required, except for the names openai,
//	                anthropic and gemini
//	base_url        http or https address, optional path, no query, fragment or
//	                user:password; a trailing / is dropped; required, except as above
//	                and for bedrock (https://bedrock-runtime.{region}.amazonaws.com)
//	                and vertex (https://{region}-aiplatform.googleapis.com; region
//	                global: https://aiplatform.googleapis.com), made from region
//	region          [""] the region a dialect that signs its requests works in:
//	                lower-case letters, digits and dashes (us-east-1, us-central1);
//	                required by bedrock (each signature names it, base_url or not),
//	                which takes the standard AWS chain's when the file names none
//	                (AWS_REGION, AWS_DEFAULT_REGION, the AWS profile's region), and
//	                by vertex without a base_url; refused on a kind that sends a
//	                key (openai, azure, anthropic, gemini)
//	project         [""] vertex only: the Google Cloud project (id or number) that calls
//	                of another kind, translated for this provider as their fallback,
//	                go to, with region as its location
//	                (/v1/projects/{project}/locations/{region}/publishers/…, the
//	                publisher anthropic for a claude-… model, else google); required,
//	                with region, by such a fallback
//	credentials_file [""] a file of the gateway's own credentials for a dialect that
//	                signs (vertex: a Google service-account JSON file; bedrock: an
//	                AWS shared credentials file), instead of
//	                the standard chain (Application Default Credentials, AWS's);
//	                must be a readable regular file when the config is loaded;
//	                refused on a kind that sends a key
//	api_key_env     [""] environment variable with the provider key, which the gateway then
//	                injects, dropping whatever key the client sent (its SDK still needs
//	                one to start: a placeholder such as unused-when-injected, or its
//	                auth.keys token); "" passes the client's own key through. When set,
//	                a listen address off loopback needs auth.keys
//	api_keys_env    [none] a pool of keys instead of api_key_env (not both): a list whose
//	                items are a variable's name or {env: NAME, weight: N} (weight [1]); each
//	                attempt takes the next key neither paused nor out of quota, by weighted
//	                round robin. Off loopback it needs auth.keys like api_key_env
//	max_concurrent  [1024] calls in flight to the provider, counted across the processes
//	                sharing the state; beyond it a call waits for a slot (at most its
//	                policy's max_queue), then gets 429 rate_limited
//	models.MODEL    [none] what the provider's model MODEL can take (a name ending in *
//	                covers every model that starts with the rest; its own name wins, then
//	                the longest such prefix, whole): context, its window, and output, its
//	                most output tokens [not declared], at least 1; tools (definitions,
//	                calls, results), images and json_schema (a schema for the answer)
//	                [true]. A target, the route's provider (when a fallback follows) or
//	                a fallback, whose model cannot take a request is skipped without a
//	                call (log: skipped: <reason>); its context is checked against the
//	                request's words, fewer than its tokens in the public tokenizers, so
//	                only a request that surely does not fit is skipped
//
// routes, a list [/openai to openai and /anthropic to
// anthropic, both interactive]:
//
//	prefix      path prefix starting with /, forwarded with the prefix stripped; unique; a
//	            trailing / is dropped; not /healthz, /metrics or /sluice
//	provider    the provider that answers; required
//	policy      [interactive] the policy its calls run under
//	fallbacks   [] targets {provider, model} tried in order when the provider cannot answer,
//	            the request's model rewritten; each provider of the same kind, or of a kind
//	            the engine translates the route's calls for (sluice.Translates: openai,
//	            azure, anthropic and gemini calls, to openai, azure — its v1 API,
//	            /openai/v1/chat/completions, the model naming the deployment —
//	            anthropic, gemini, vertex — with its project and region — and bedrock)
//	retry_safe  [true] its requests may be retried without an Idempotency-Key header
//
// policies.NAME [interactive and nightly]:
//
//	timeout.connect         [5s / 10s] TCP and TLS handshake
//	timeout.first_byte      [20s / 120s] request written to response headers; for a stream, to
//	                        the first byte of its first event (SSE comments before it, such
//	                        as keep-alives, do not count)
//	timeout.idle            [15s / 30s] longest silence between two body chunks
//	timeout.total           [30s / 600s] the whole call, every attempt and wait; at least
//	                        connect + first_byte. It also bounds a half-open probe's lease
//	max_queue               [total − first_byte] longest an attempt waits for a rate-limit
//	                        slot (see limits) before the call gets 429 rate_limited; never
//	                        more than what total leaves after one first_byte
//	priority                [interactive / batch] where calls wait for a rate-limit or
//	                        concurrency slot, waiting interactive calls go before batch ones
//	                        (in every process sharing the state); a request's Sluice-Priority
//	                        header (interactive or batch) overrides it
//	resume                  [false] a stream that breaks after its answer began (cut, stalled
//	                        past idle, the provider's error event) goes on from where it
//	                        broke on the next attempt, within total: the text sent as the
//	                        assistant's prefix (Anthropic, Bedrock), else the call again with
//	                        the text it repeats not relayed twice; never after a tool call
//	                        or for structured output. false ends the stream with the error
//	resume_max              [1] resumes of one call at most
//	hedge.after             [none] when a call that has not begun to answer (a stream's first
//	                        event, an answer's headers) is raced by a second attempt on the
//	                        next target (the first fallback, else the same provider); the
//	                        first to answer wins, the other is cancelled: a duration (2s), or
//	                        a percentile of the provider and model's recent times to first
//	                        byte in this process (p95; no hedge before 20 are known). Never
//	                        while that target's breaker is not closed, its rate limit has no
//	                        slot at once, or the budgets refuse it; never for a call with an
//	                        Idempotency-Key
//	hedge.max_share         [5%] hedges at most this share of the hedgeable calls over the
//	                        last minute, so hedging stops itself when every call is slow
//	retry.max_attempts      [3 / 5] tries, the first included; 1 never retries
//	retry.base, retry.cap   [400ms, 16s / 1s, 60s] full-jitter backoff: before retry n, a wait
//	                        uniform in [0, min(cap, base·2^(n-1))); cap at least base
//	retry.max_retry_after   [20s / 120s] longest Retry-After honoured; a longer one ends the call
//	retry.statuses          [408, 429, 500, 502, 503, 504, 529] statuses retried, 100 to 599
//	retry.quota_markers     [insufficient_quota, billing_hard_limit_reached] strings that mark
//	                        a 429 as quota used up: never retried, not a breaker failure
//	retry.fallback_markers  [context_length_exceeded, "prompt is too long"] strings that
//	                        mark a 4xx as one another model may not share: the call
//	                        moves on to the route's next fallback
//	retry.budget            [0.2] share of calls in flight that may be retries: 0.2, 20% or off
//	breaker.failures        [5] consecutive failures that open the breaker
//	breaker.cool            [30s / 60s] time open before one probe is let through
//	breaker.scope           [provider] provider (one breaker per provider) or model (one per
//	                        provider and model)
//	breaker.slow.threshold  [15s / 0s] attempts slower than this count as slow; 0s turns it off
//	breaker.slow.count      [3] slow attempts within the window that open the breaker
//	breaker.slow.window     [60s] the window slow attempts are counted in
//
// budgets, a list of spend caps [none]:
//
//	name            names the cap in logs and metrics; required, unique
//	limit_usd       the cap in US dollars per period; more than 0
//	period          day, month, or a duration such as 6h
//	scope           [all] all traffic, or one cap per key (client key), model or provider
//	unpriced        [refuse] allow or refuse a call whose model has no price
//	on_store_error  [refuse] allow or refuse while the state store is unreachable
//
// prices.MODEL, USD per million tokens [none]:
//
//	input, output   both required, 0 or more. A MODEL ending in * (gpt-4o*) prices every
//	                model that starts with the rest; an exact name wins, then the
//	                longest such prefix (Config.PriceOf)
//	cache_read      [input] the price of prompt tokens read from the provider's cache
//	cache_write     [input] the price of prompt tokens written to it
//
// # Errors
//
// Parse refuses, with one line that starts with "config: " and names the
// key path, the problem and the fix, and the line when the file has it:
//
//	config: policies.interactive.retry.max_atempts: unknown key (did you mean max_attempts?) at line 7
//
// It refuses unknown keys, values of the wrong type, bad durations and
// sizes, negative durations and zero ones where zero means nothing, a
// total shorter than connect + first_byte, a route naming a provider or
// policy that is not defined, a fallback of another API kind, duplicate
// route prefixes, an unknown state backend, redis without a URL (mode
// single) or without addrs (sentinel, cluster) or master (sentinel), a
// budget without a positive limit, a known period or scope, an
// api_key_env on a listen address off loopback without auth.keys, a kind
// that is not a dialect's, a region that does not look like one, a
// credentials_file that cannot be read, either on a kind that sends a
// key, and a model's declaration with a '*' inside its name or a size
// below 1. Messages never show a token, a key or a URL's password.
// Config.Warnings lists what is allowed but likely a mistake.
//
// # Worst case
//
// WorstCase and Config.WorstCaseRoute give the longest a call can spend on
// attempts and the waits between them, bounded by total; `sluice check`
// prints them.
package config
