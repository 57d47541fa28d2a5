package main

// fakeSteps lists the steps of a fake script, one line each with an
// example, for `sluice fake --help`. Each example parses with
// fake.ParseScript (a test checks it).
var fakeSteps = []struct{ step, does, example string }{
	{"STATUS", "answer with that status: 200 an answer, 4xx/5xx an error in the API's shape", "503,503,200"},
	{"STATUS:retry-after=N", "error with Retry-After: N seconds (Gemini: RetryInfo retryDelay \"Ns\" in the body)", "429:retry-after=2"},
	{"STATUS:retry-after-ms=N", "error with retry-after-ms: N", "429:retry-after-ms=1500"},
	{"STATUS:retry-after-date=N", "error with Retry-After as an HTTP date N seconds ahead", "503:retry-after-date=30"},
	{"STATUS:should-retry=BOOL", "error with x-should-retry: true or false", "500:should-retry=false"},
	{"STATUS:insufficient_quota", "quota used up (OpenAI insufficient_quota, Anthropic credit balance, Azure call volume quota, Gemini per-day quota)", "429:insufficient_quota"},
	{"STATUS:context_length_exceeded", "prompt too long for the model", "400:context_length_exceeded"},
	{"STATUS:content_policy", "a content-policy refusal", "400:content_policy"},
	{"STATUS:model_not_ready", "Bedrock's ModelNotReadyException (other APIs: the status's usual error)", "429:model_not_ready"},
	{"hang", "accept the request and never answer", "hang"},
	{"slow:DUR", "wait DUR, then answer 200", "slow:16s"},
	{"reset", "close the connection with a TCP RST, no response", "reset"},
	{"overloaded", "a stream: 200, its first event an overloaded error; else the plain error (Anthropic 529, others 503)", "overloaded"},
	{"throttled", "Bedrock's stream: 200, its first frame a throttlingException; else a plain 429", "throttled"},
	{"stream:events=N", "a 200 stream of N text events (modifiers join with ;)", "stream:events=64;interval=20ms"},
	{"stream:interval=DUR", "DUR between stream events", "stream:interval=50ms"},
	{"stream:keepalive=N", "N SSE comments (: OPENROUTER PROCESSING), an interval apart, before the first event", "stream:keepalive=10;interval=100ms"},
	{"stream:stall-after=N", "N events, then silence until the client leaves", "stream:stall-after=3"},
	{"stream:cut-after=N", "N events, then the connection closes mid-stream", "stream:cut-after=5"},
	{"stream:error-after=N", "N events, then an overloaded error event", "stream:error-after=2"},
}
