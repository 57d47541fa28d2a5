// Package fake is a scripted fake OpenAI, Anthropic, Gemini, Azure OpenAI,
// AWS Bedrock and Google Vertex AI API, for tests and drills. A Provider is an http.Handler; NewServer runs one on a loopback
// address the way httptest.NewServer does, and `sluice fake` runs one as a
// command.
//
// # Endpoints
//
// A path ending in /chat/completions speaks OpenAI chat completions, one
// ending in /responses the OpenAI Responses API (text only), and one ending in
// /messages Anthropic messages; any prefix is accepted (/v1/messages,
// /x/v1/chat/completions). Answers have the shape of the real APIs, so that
// the official SDKs accept them, streamed as server-sent events when the
// request body has "stream": true. An OpenAI chat stream ends with a usage
// chunk only when the request has "stream_options": {"include_usage": true}.
// A Responses API answer is one assistant message; its stream carries every
// event the official stream helpers rebuild a response from
// (response.created, response.in_progress, response.output_item.added,
// response.content_part.added, the response.output_text.delta events,
// response.output_text.done, response.content_part.done,
// response.output_item.done, response.completed with the whole response
// and its usage), so a stream's "after" counts those events too.
// A path ending in /models/{model}:generateContent speaks Google's Gemini
// API (any model, any prefix: /v1beta/…, /v1/…), the model taken from the
// path; :streamGenerateContent streams (as with ?alt=sse) whatever the body
// says, one chunk per piece of text, each with the usageMetadata so far,
// the last with finishReason STOP and no other end (a stream without it was
// cut); :countTokens answers {"totalTokens":N}, :embedContent and
// :batchEmbedContents a fixed embedding. Gemini errors are Google's
// {"error":{"code","message","status","details"}}: a 429 is
// RESOURCE_EXHAUSTED with a google.rpc.QuotaFailure naming a per-minute
// quota (a rate limit), insufficient_quota names a per-day one (a quota used
// up); retry-after=N and retry-after-ms=N become a google.rpc.RetryInfo
// retryDelay in the body ("13s", "0.5s") and send no header, as Google
// does; an error event is a data event holding that object (UNAVAILABLE,
// 503).
// Every answer carries a unique id in x-request-id (OpenAI, Gemini) or
// request-id (Anthropic).
//
// Azure OpenAI's two URL styles answer as OpenAI too:
// /openai/deployments/{deployment}/chat/completions (and /responses) under
// any api-version, and /openai/v1/chat/completions (and /responses) when
// the request says it is for Azure (an api-version query parameter or an
// api-key header; without either it is a plain OpenAI base URL). A chat
// stream begins with Azure's event of the prompt's content filter results
// (no choices, an empty id). Their
// 429s speak Azure: code "429" and "Requests to the ChatCompletions_Create
// Operation under Azure OpenAI API version … have exceeded token rate
// limit of your current OpenAI S0 pricing tier. Please retry after N
// seconds. …", with both retry-after-ms and Retry-After (the step's hint,
// else one second); 429:insufficient_quota is Azure's quota 429, "Out of
// call volume quota for this Azure OpenAI resource. …", with no hint. A
// call the rate limits refuse gets Azure's wording and retry-after-ms, and
// every answer under a limit OpenAI's x-ratelimit- headers with the reset
// in whole seconds ("6"), as Azure writes it.
//
// Answers are deterministic: the text is "This is a fake answer." cut in
// Events pieces (repeated when longer), one piece per stream event; prompt
// tokens are the request body's length in bytes divided by 4, completion
// tokens the number of pieces. The model is the request's, else gpt-4o-mini
// (OpenAI) or claude-haiku-4-5 (Anthropic); Gemini's is the path's.
//
// A Provider whose Chat is set answers the chat endpoints (chat
// completions, messages, generateContent, Converse) with that answer in
// place of the text: any mix of text and tool calls, a stop reason and
// usage with cache tokens, written by the API's codec (dialect/chat),
// streamed with each text block and each tool call's arguments in 3
// pieces. A Provider whose Strict is set checks each chat request against
// its API's rules as the provider does (Anthropic's alternating roles,
// max_tokens, tool_result ids; on Vertex AI, a Claude body with
// anthropic_version vertex-2023-10-16 and no model; Gemini's contents,
// parts and function turns; Converse's content blocks and toolConfig;
// OpenAI's tool messages) and refuses one that breaks them with the API's
// 400 naming the rule.
//
// GET /fake/calls answers {"calls":N,"played":{"200":N,"503":N,…},
// "rate_limited":N}: the calls, the calls by the step they played (a mix
// step counted as the step it picked) and the calls the rate limits
// refused; with Bedrock or Vertex AI in use, also "unauthorized" (calls
// refused for their credentials) and "tokens_issued". POST /fake/reset
// calls Reset. Neither counts as a call, nor does a request to any other
// path, which gets a 404 in OpenAI's error shape.
//
// # AWS Bedrock Runtime
//
// POST /model/{modelId}/converse, /converse-stream, /invoke and
// /invoke-with-response-stream (any prefix), the model id one escaped path
// segment ("anthropic.claude-3-haiku-20240307-v1%3A0"). Every request
// must carry a SigV4 signature (service "bedrock") by Provider.AWS, whose
// empty fields take DefaultAWS's: the fake signs the request again with
// aws-sdk-go-v2's signer, from the headers it says it signed and the body
// as received, and compares. Otherwise it answers 403 {"message":…} with
// x-amzn-ErrorType MissingAuthenticationTokenException (no signature),
// UnrecognizedClientException (another access key or session token) or
// InvalidSignatureException (another secret, region, service, a changed
// body or header, a date 15 minutes off the Provider's clock); such a call
// plays no step and counts in Unauthorized, not in Calls. Headers the Go
// signer never signs (User-Agent, X-Amzn-Trace-Id, Expect,
// Transfer-Encoding) cannot be among the signed ones.
//
// Converse answers Bedrock's {"output":{"message":{"role","content":
// [{"text"}]}},"stopReason":"end_turn","usage":{"inputTokens",
// "outputTokens","totalTokens"}}; InvokeModel answers Anthropic's message,
// with X-Amzn-Bedrock-Input-Token-Count and -Output-Token-Count headers.
// Streams are AWS event-stream frames (application/vnd.amazon.eventstream):
// ConverseStream sends messageStart, a contentBlockDelta per piece of text,
// contentBlockStop, messageStop and metadata (the usage);
// InvokeModelWithResponseStream sends chunk events whose bytes are the
// base64 of Anthropic's stream events, the last (message_stop) with
// amazon-bedrock-invocationMetrics. A stream's "after" counts frames.
// Errors are {"message":…} with x-amzn-ErrorType and x-amzn-RequestId:
// 400 ValidationException, 403 AccessDeniedException, 404
// ResourceNotFoundException, 408 ModelTimeoutException, 424
// ModelErrorException, 429 ThrottlingException (ModelNotReadyException
// with model_not_ready, ServiceQuotaExceededException with
// insufficient_quota), 500 InternalServerException, 503
// ServiceUnavailableException. In a stream, error-after=0 (overloaded)
// sends a serviceUnavailableException frame, error-after=N>0 a
// modelStreamErrorException, throttled a throttlingException
// (:message-type exception, :exception-type the name). Bedrock sends no
// rate-limit headers; a call the Provider's limits refuse is a 429
// ThrottlingException, with the Retry-After every refused call gets here
// (real Bedrock sends none).
//
// # Google Vertex AI
//
// POST {prefix}/projects/{project}/locations/{region}/publishers/google/
// models/{model}:generateContent (and the other Gemini methods; prefix
// /v1 or /v1beta1) answer as Gemini above, and
// …/publishers/anthropic/models/{model}:rawPredict and :streamRawPredict
// as Anthropic's messages, the model taken from the path. Every call needs
// Authorization: Bearer with an access token the Provider's token endpoint
// issued and that has not expired by the Provider's clock; otherwise 401
// UNAUTHENTICATED in Google's error shape, counted in Unauthorized, not in
// Calls.
//
// The token endpoint, POST /token (TokenPath), takes the OAuth2
// JWT-bearer grant a service-account key file's token_uri points
// golang.org/x/oauth2/google and cloud.google.com/go/auth at. It knows the
// accounts Provider.NewServiceAccount made (Server.WriteServiceAccount
// writes one's file): the assertion must be RS256-signed by the account's
// key, its aud the account's token_uri, alive and at most an hour long,
// else 400 invalid_grant. A token lives Provider.TokenLifetime (an hour if
// zero); TokensIssued counts them. FailTokens(status), or POST
// /fake/token-endpoint?status=N, makes the endpoint fail with that status
// until FailTokens(0) (?status=0).
//
// # Scripts
//
// A script is a list of steps separated by commas, such as "503,503,200".
// A call follows the script in its Sluice-Fake-Script header, else
// Provider.Script, else "200". The n-th call carrying a script plays its
// n-th step, counted for each distinct script text; past the end the last
// step repeats. A call whose script does not parse gets a 400 that names
// the problem. The steps:
//
//	200, 201, …         an answer with that status
//	429, 503, 529, …    an error with that status, in the dialect's shape
//	hang                nothing, until the client leaves or Close
//	slow:DUR            wait DUR (16s, 50ms), then answer 200
//	reset               close the connection with a TCP RST, no response
//	stall               200, then part of the answer, then silence until the
//	                    client leaves or Close: a stream's first 2 events
//	                    (its first text included); a JSON answer's headers,
//	                    with the full Content-Length, and half its body
//	cut                 as stall, but the connection then closes: the client
//	                    reads an unexpected EOF
//	mix:STEP=P%;…       one of the steps, picked at random for each call
//	overloaded          the provider is overloaded: a request that asked for
//	                    a stream gets 200, then a stream whose first event is
//	                    an overloaded error (Anthropic's event: error), then
//	                    its end; any other request gets the plain error, as an
//	                    SDK raises it: Anthropic 529 overloaded_error, OpenAI,
//	                    Azure, Gemini and Bedrock 503
//	throttled           the provider throttles the call: a Bedrock stream gets
//	                    200 and a throttlingException as its first frame; any
//	                    other request a plain 429 in the API's shape (the other
//	                    APIs never throttle inside a stream)
//	stream:MODS         a 200 stream, even if the request did not ask for one
//
// An error step takes modifiers after a colon, separated by semicolons, as
// in "429:insufficient_quota;retry-after=2":
//
//	retry-after=N         Retry-After: N (seconds)
//	retry-after-ms=N      retry-after-ms: N
//	retry-after-date=N    Retry-After as an HTTP date at least N seconds ahead
//	should-retry=BOOL     x-should-retry: true or false
//	insufficient_quota    OpenAI's insufficient_quota error; for Anthropic a
//	                      credit-balance message; both bodies hold the text
//	                      "insufficient_quota"; for Gemini a RESOURCE_EXHAUSTED
//	                      whose QuotaFailure names a per-day quota
//	context_length_exceeded   OpenAI's context_length_exceeded; Anthropic's
//	                      "prompt is too long"
//	content_policy        a content-policy refusal
//	model_not_ready       Bedrock's ModelNotReadyException (real Bedrock sends
//	                      it with a 429); the usual error elsewhere
//
// A stream step's modifiers are separated by semicolons too, as in
// "stream:events=64;interval=20ms;cut-after=40". Events are counted on the
// wire: every server-sent event counts, the role chunk or message_start
// included.
//
//	events=N          N text events (default Provider.Events)
//	interval=DUR      DUR between events (default Provider.Interval)
//	keepalive=N       N SSE comment lines (": OPENROUTER PROCESSING"), each
//	                  after an interval, before the first event: a model
//	                  still queued; they are no event and not counted
//	stall-after=N     N events, then silence until the client leaves or
//	                  Close; stall-after=0 sends the headers only
//	cut-after=N       N events, then the connection closes without the
//	                  stream's end: the client reads an unexpected EOF
//	error-after=N     N events, then an overloaded error event, then the
//	                  end; "overloaded" is error-after=0 for a request that
//	                  asked for a stream
//
// # Random faults
//
// A mix step picks, for each call, one of its steps with the given
// probability; the calls left over answer 200. Its shares are separated by
// semicolons, as in
//
//	mix:503=10%;reset=5%;hang=1%;stall=2%;seed=7
//
// which answers 503 to about 10 % of calls, resets 5 %, hangs 1 %, stalls
// 2 % mid-answer and answers the other 82 % with 200. A share's step is any
// step written without "=" or ";" (a status, hang, reset, stall, cut,
// overloaded, slow:DUR, 429:insufficient_quota, …); the percentages, from 0
// to 100 with decimals allowed, add up to 100 at most. seed=N (default 0)
// seeds the picks: a Provider plays the same sequence of picks for the same
// seed, counted in the order the calls arrive, so that a run can be
// repeated. Played and GET /fake/calls report what was picked. A mix may
// stand among other steps ("503,mix:503=50%"); it then picks on every call
// that reaches it, the last step repeating as usual.
//
// # Rate limits
//
// With Provider.RequestsPerMinute or Provider.TokensPerMinute set (`sluice
// fake --rpm N --tpm N`), the fake behaves like a rate-limited provider.
// The limits count over a sliding window of 60 seconds: the Provider keeps
// the time and tokens of every call it admitted in the last minute, and a
// call admitted at t leaves the window at t+60s exactly. A call is
// admitted when the calls in the window, plus it, stay within
// RequestsPerMinute, and their tokens, plus its own, within
// TokensPerMinute; it then plays its script as usual. Otherwise it gets a
// 429 at once: it takes no step of its script (the next admitted call
// plays that step) and is not counted in the window. A call's tokens are
// its prompt tokens as the fake counts them (body bytes / 4) plus its
// output limit: the first positive of max_tokens, max_completion_tokens
// and max_output_tokens, else the completion tokens of the answer its next
// step would give (the step's events, else Provider.Events, else 5). A
// call with more tokens than TokensPerMinute is never admitted.
//
// The 429 has the dialect's shape. OpenAI (chat completions and the
// Responses API):
//
//	{"error":{"message":"Rate limit reached for requests per min (RPM): Limit 120, Used 120,
//	 Requested 1. Please try again in 30s.","type":"requests","param":null,"code":"rate_limit_exceeded"}}
//
// with "type":"tokens" and "Rate limit reached for tokens per min (TPM)"
// for the token limit, and "Request too large for tokens per min (TPM)"
// for a call larger than it. Gemini: RESOURCE_EXHAUSTED with a QuotaFailure
// naming the per-minute request (or input token) quota and a RetryInfo
// whose retryDelay is the wait in whole seconds ("40s"); Google sends no
// rate-limit headers, so a Gemini answer carries none. Anthropic:
//
//	{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed
//	 the rate limit for your organization of 120 requests per minute. …"},"request_id":"req_…"}
//
// Its Retry-After is the time until enough of the oldest admitted calls
// have left the window to make room for the call, in whole seconds
// rounded up, at least 1; 60 for a call larger than the token limit. When
// both limits refuse a call, the body names the request limit and
// Retry-After is the longer wait.
//
// While a limit is set every answer, 200s and script errors too, carries
// that limit's headers, counted after the call as the real APIs do, so
// that a client can learn the limit from them. OpenAI:
// x-ratelimit-limit-requests, x-ratelimit-remaining-requests,
// x-ratelimit-reset-requests and the same three ending in -tokens, the
// reset being the time until the window is empty again (its newest call
// leaves) in OpenAI's format ("1m0s", "6m0s", "250ms", rounded up to the
// millisecond). Anthropic: anthropic-ratelimit-requests-limit,
// -requests-remaining, -requests-reset and the same for -tokens-, the
// reset being that time as RFC 3339 in UTC, rounded up to the second. A
// limit that is not set sends no headers. Reset empties the window.
//
// Provider.TokenBucket makes each limit a token bucket that refills
// continuously instead; Provider.Burst (and TokensBurst) make the bucket
// hold less than a minute's worth, a per-minute limit enforced over
// shorter spans, the headers then giving the minute's limit and what is
// left of the burst. Provider.LimitHeaders changes only what the headers
// say: LimitHeadersNone sends none (a 429 tells only its Retry-After),
// LimitHeadersOverstate overstates each remaining count by half the limit.
//
// The limits count by Provider.Now (time.Now if nil), so that a test can
// move a clock of its own and expect exact counts.
package fake
