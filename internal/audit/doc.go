// Package audit implements "sluice audit": it finds OpenAI, Anthropic,
// AWS Bedrock Runtime and Google GenAI SDK clients that are built to retry
// on their own or to wait too long.
//
// Behind the Sluice gateway, retries happen once, in one place. Every
// answer of the gateway says x-should-retry: false, which the OpenAI and
// Anthropic SDKs obey, so an SDK does not retry the gateway's answers even
// at its default of 2 retries. What it still retries is a connection error
// and its own timeout: an SDK timeout shorter than the gateway's total
// abandons a call the gateway is still working on (retrying, or waiting for
// a slow answer) and sends it again while the first still runs — that is
// the multiplier, each call paid for. An SDK left at its default timeout
// (10 minutes in the Python and JavaScript SDKs) hangs workers. So every
// client construction gets these checks:
//
//   - retries: the client must be given 0 retries (max_retries=0 in Python,
//     maxRetries: 0 in JavaScript/TypeScript, option.WithMaxRetries(0) in
//     Go). A missing setting and a literal non-zero one are findings.
//   - timeout: the client must be given an explicit timeout (timeout=…,
//     timeout: …, option.WithRequestTimeout(…) or option.WithHTTPClient
//     with a client whose Timeout is set). Python's timeout=None, which
//     disables the timeout, is a finding too. The advice is a timeout a
//     little above the gateway's total (total + TimeoutMargin) with the
//     SDK's retries at 0, so that the gateway's own 504 arrives first.
//   - short timeout: a timeout known where the client is built (a number
//     of seconds in Python, of milliseconds in JavaScript and in
//     google-genai, a Go duration such as 20*time.Second or a name bound
//     once to one) that is shorter than the gateway's total is a finding
//     naming both. The total is Options.Total: `sluice audit` takes it
//     from the gateway's config (--config, else $SLUICE_CONFIG) and the
//     policy --policy names (else interactive, else the one with the
//     shortest total); with neither, the built-in interactive policy's
//     30s (DefaultTotal). A timeout equal to the total or above is none.
//
// Anthropic's Bedrock and Vertex AI clients (AnthropicBedrock,
// AnthropicVertex and their Async variants; Go's NewClient given a
// bedrock or vertex option) obey x-should-retry like any Anthropic client
// and go through the gateway's bedrock and vertex routes: they are advised
// like the others, as are Azure OpenAI clients.
//
// The AWS SDKs and Google's google-genai do not read x-should-retry: at
// their retry settings they retry the gateway's own final answers (a 503,
// 504 or 429 after the gateway's retries), each retry starting the
// gateway's retries again. Their retry options count attempts, so the
// advice is one attempt:
//
//   - AWS Bedrock Runtime: JavaScript's new BedrockRuntimeClient(…) (and
//     BedrockRuntime) from @aws-sdk/client-bedrock-runtime makes 3 attempts
//     unless maxAttempts says otherwise (a retryStrategy is taken as set);
//     its timeout is requestHandler's requestTimeout (milliseconds), from
//     an options object or a new NodeHttpHandler(…) / NodeHttp2Handler(…),
//     none by default. Go's bedrockruntime.NewFromConfig(cfg, fns…) and
//     New(options, fns…) from aws-sdk-go-v2 make 3 attempts unless
//     RetryMaxAttempts (0 is the default) or a Retryer says otherwise:
//     aws.NopRetryer{} is one, retry.AddWithMaxAttempts(r, n) n,
//     retry.NewStandard its MaxAttempts; these are read from the Options
//     literal, from function literals assigning o.Field, and from cfg when
//     it is bound once by config.LoadDefaultConfig(ctx, …)
//     (WithRetryMaxAttempts, WithRetryer, WithHTTPClient) or an aws.Config
//     literal, and assignments to its fields. The timeout is the HTTP
//     client's: awshttp.NewBuildableClient().WithTimeout(d) (WithReadTimeout
//     counts as set) or an *http.Client with Timeout; none by default.
//     Python's boto3 / botocore / aioboto3 .client("bedrock-runtime", …)
//     (and create_client) reads config=Config(…): its retries dict's
//     total_max_attempts counts attempts, max_attempts counts retries after
//     the first (in every mode), and with neither botocore makes 5 attempts
//     in legacy mode, its default, 3 in standard and adaptive; its timeout
//     is read_timeout (seconds, 60 per read by default; None disables it).
//     AWS_MAX_ATTEMPTS and the shared config file are not read.
//   - google-genai (Python genai.Client, JavaScript and TypeScript new
//     GoogleGenAI, Go's genai.NewClient from google.golang.org/genai)
//     retries nothing unless its HTTP options carry retry options
//     (retry_options, retryOptions, RetryOptions), which then make 5
//     attempts unless attempts says otherwise; their timeout is
//     http_options / httpOptions' timeout (milliseconds, none by default;
//     None or undefined leaves none), read from a dict or object literal,
//     an HttpOptions(…) call or a name bound once to one, and in Go
//     HTTPOptions.Timeout (genai.Ptr(d) or &d) or the HTTPClient's Timeout.
//
// The community Go client github.com/sashabaranov/go-openai retries
// nothing, so it gets the timeout check only: NewClient never has one,
// and NewClientWithConfig has one when its config's HTTPClient sets a
// Timeout (in a ClientConfig literal or by an assignment cfg.HTTPClient =
// … anywhere in the file). The fixes of go-openai and google-genai also
// name the base URL (base_url, baseUrl, config.BaseURL) to point at the
// gateway; go-openai reads no base-URL variable. Not read: a Python
// "import google.genai" used without an alias, a dot import of go-openai,
// per-request options.
//
// Test files and folders are skipped unless Options.IncludeTests is set
// (see isTestFile and testDirs), and Options.Exclude skips paths by glob.
//
// What is read, per language:
//
//   - Python: calls of OpenAI, AsyncOpenAI, AzureOpenAI, AsyncAzureOpenAI,
//     Anthropic, AsyncAnthropic, the Bedrock, Vertex and Foundry variants
//     and the Client/AsyncClient aliases, bound by "from openai import …"
//     (aliases included) or called through "import openai [as x]"
//     (x.OpenAI(…)). Settings come from keyword arguments, from **spreads
//     of a dict literal, a dict(…) call or a name bound once in the file to
//     either, or a conditional of those (a if c else b, c and a, a or b),
//     and from .with_options(…) or .copy(…) chained onto the
//     construction. An httpx client passed as
//     http_client=httpx.Client(timeout=…) counts as a timeout, as the SDK
//     adopts it; httpx.Timeout(None, …) without a read timeout counts as
//     turning the timeout off, and NOT_GIVEN as leaving the default. A
//     later client.with_options(…) that sets max_retries to a non-zero
//     number, or timeout=None, is a finding of its own.
//   - JavaScript and TypeScript: "new" of the classes exported by openai,
//     @anthropic-ai/sdk, @anthropic-ai/bedrock-sdk and
//     @anthropic-ai/vertex-sdk, bound by default, named or namespace
//     imports (any local name), require(…), awaited import(…) and
//     TypeScript's import X = require(…); npm:, jsr: and versioned
//     specifiers are understood. Settings come from the options object (or
//     a name declared once, in the innermost block that declares it, as an
//     object literal and never assigned again), its spreads (later
//     properties override earlier ones; a conditional spread such as
//     ...(c ? a : b), ...(c && a) or ...(a ?? b) is read as either
//     branch), and .withOptions(…) chained onto
//     the construction. A later client.withOptions(…) that sets maxRetries
//     to a non-zero number is a finding of its own.
//   - Go: calls of NewClient from github.com/openai/openai-go and
//     github.com/anthropics/anthropic-sdk-go (any major version, any import
//     alias, dot imports), parsed with go/parser. Options are read from the
//     arguments, and from a variadic opts... whose slice is declared in the
//     enclosing function or the file and only appended to afterwards.
//
// The Python and JavaScript lexers skip comments and every kind of string
// literal (triple-quoted, prefixed, f-strings with nested fields, template
// literals with nested substitutions, regular expressions), and calls are
// read by matching brackets, so a call may span any number of lines. A
// finding's line is the line where the constructor's name is written.
//
// The audit reads one file at a time, without running or type-checking
// anything, and never reports what it cannot see. A conditional spread
// whose branches are both known sets an option both branches set alike to
// that value; an option only one branch sets may or may not be set, so it
// is no finding; one neither sets stays unset (a missing timeout is still
// found). A timeout given as any expression (60 * 1000, TIMEOUT_MS,
// httpx.Timeout(30.0)) counts as set. Settings it cannot know
// statically are taken as set: a value that is not a literal (or a name
// bound once in the file to a literal), a spread or options argument it
// cannot resolve, a Go option built by a function outside the SDK, a
// wrapper whose options come from its caller. Not read at all: a subclass
// of an SDK client, a client class imported through a module of one's own
// or any other re-export, a class bound to another name by assignment
// (Client = OpenAI), module-level settings of the legacy Python client
// (openai.max_retries = …), Go services built without NewClient, and
// per-request options and context deadlines. Python names are resolved
// file-wide, not per function, so a name bound more than once (a
// parameter of the same name included) is not resolved. Text inside JSX
// elements is read as code, so a "new OpenAI(" written as JSX text, outside
// braces, would be reported. A UTF-16 file looks binary and is skipped.
//
// A comment containing "sluice:ignore" on a finding's line silences it.
package audit
