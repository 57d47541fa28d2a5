package audit

import (
	"fmt"
	"time"
)

// The words of the SDKs that do not read x-should-retry: the AWS SDKs
// (Bedrock Runtime) and Google's google-genai. Their retries option counts
// attempts, so the advice is one attempt, not zero retries.
var (
	// awsJS words the findings for @aws-sdk/client-bedrock-runtime.
	awsJS = dialect{
		cloud:          "the AWS SDK",
		retries:        "maxAttempts",
		defaultRetries: "the SDK default of 3 attempts (AWS_MAX_ATTEMPTS aside)",
		setsN:          "sets maxAttempts: %s",
		setRetries:     "pass maxAttempts: 1 and let the gateway retry",
		setTimeout: "pass requestHandler: { requestTimeout: … } in milliseconds " + aboveTotal +
			", with maxAttempts: 1, so that the gateway's clean 504 arrives first; the options object keeps the default handler, which speaks HTTP/2 (the gateway serves it as h2c), and new NodeHttpHandler({ requestTimeout: … }) works too, over HTTP/1.1",
		defaultTTL: "as long as the connection stays open (the SDK's request handler has no request timeout by default)",
		raise:      "pass requestHandler: { requestTimeout: %s } (milliseconds), above the gateway's total, with maxAttempts: 1, so that the gateway's clean answer or 504 arrives first",
		unit:       time.Millisecond,
	}
	// awsGo words the findings for aws-sdk-go-v2's bedrockruntime.
	awsGo = dialect{
		cloud:          "the AWS SDK",
		retries:        "RetryMaxAttempts",
		defaultRetries: "the SDK default of 3 attempts (standard mode; 0 means the default too)",
		setsN:          "allows %s attempts",
		setRetries: "set o.RetryMaxAttempts = 1 in the client's options (or config.WithRetryMaxAttempts(1), " +
			"or Retryer: aws.NopRetryer{}) and let the gateway retry",
		setTimeout: "set o.HTTPClient = awshttp.NewBuildableClient().WithTimeout(…) (or an *http.Client whose Timeout is set) " + aboveTotal +
			", with RetryMaxAttempts 1, so that the gateway's clean 504 arrives first",
		defaultTTL: "as long as the connection stays open (the SDK's HTTP client has no overall timeout, and none per read for Bedrock Runtime)",
		raise:      "set the HTTP client's timeout to %s, above the gateway's total, with RetryMaxAttempts 1, so that the gateway's clean answer or 504 arrives first",
	}
	// awsPython words the findings for boto3's (and botocore's)
	// bedrock-runtime client. Its retries dict's max_attempts counts
	// retries, total_max_attempts attempts.
	awsPython = dialect{
		cloud:          "botocore",
		retries:        "retries",
		defaultRetries: "botocore's default (5 attempts in legacy mode, the default mode; 3 in standard and adaptive; AWS_MAX_ATTEMPTS aside)",
		setsN:          "sets retries %s",
		setRetries: "pass config=Config(retries={'total_max_attempts': 1}) and let the gateway retry " +
			"(or {'max_attempts': 0}: in the retries dict max_attempts counts retries after the first attempt, in every mode)",
		setTimeout: "pass config=Config(read_timeout=…, connect_timeout=…) in seconds, read_timeout " + aboveTotal +
			", with retries={'total_max_attempts': 1}, so that the gateway's clean 504 arrives first",
		noTimeout:  "turns the read timeout off (read_timeout=None)",
		defaultTTL: "botocore's default read_timeout of 60 s per read (once per attempt), whatever the gateway's total",
		raise:      "pass config=Config(read_timeout=%s) (seconds), above the gateway's total, with retries={'total_max_attempts': 1}, so that the gateway's clean answer or 504 arrives first",
		unit:       time.Second,
	}
	// genaiPython words the findings for Google's google-genai Python
	// client, whose timeout lives in http_options, in milliseconds.
	genaiPython = dialect{
		cloud:      "google-genai",
		retries:    "retry_options",
		setsN:      "gives http_options a retry_options with attempts=%s",
		setRetries: "leave retry_options out (the SDK then sends each call once) or give it attempts=1, and let the gateway retry",
		setTimeout: "pass http_options=types.HttpOptions(timeout=…) in milliseconds " + aboveTotal +
			", with base_url=… set to the gateway's route, so that the gateway's clean 504 arrives first",
		defaultTTL: "as long as the connection stays open (the SDK sets no timeout by default)",
		raise:      "pass http_options=types.HttpOptions(timeout=%s) (milliseconds), above the gateway's total, so that the gateway's clean answer or 504 arrives first",
		unit:       time.Millisecond,
	}
	// genaiJS words the findings for Google's @google/genai client, whose
	// timeout lives in httpOptions, in milliseconds.
	genaiJS = dialect{
		cloud:      "@google/genai",
		retries:    "retryOptions",
		setsN:      "gives httpOptions a retryOptions with attempts: %s",
		setRetries: "leave retryOptions out (the SDK then sends each call once) or give it attempts: 1, and let the gateway retry",
		setTimeout: "pass httpOptions: {timeout: …} in milliseconds " + aboveTotal +
			", with baseUrl set to the gateway's route, so that the gateway's clean 504 arrives first",
		defaultTTL: "as long as the connection stays open (the SDK sets no timeout by default)",
		raise:      "pass httpOptions: {timeout: %s} (milliseconds), above the gateway's total, so that the gateway's clean answer or 504 arrives first",
		unit:       time.Millisecond,
	}
	// genaiGo words the findings for google.golang.org/genai, whose
	// timeout is HTTPOptions.Timeout or that of ClientConfig.HTTPClient.
	genaiGo = dialect{
		cloud:      "google.golang.org/genai",
		retries:    "RetryOptions",
		setsN:      "gives HTTPOptions a RetryOptions with Attempts %s",
		setRetries: "leave HTTPOptions.RetryOptions nil (the SDK then sends each call once) or set its Attempts to 1, and let the gateway retry",
		setTimeout: "set HTTPOptions: genai.HTTPOptions{Timeout: genai.Ptr(…)} " + aboveTotal +
			", with BaseURL set to the gateway's route, so that the gateway's clean 504 arrives first; or an HTTPClient whose Timeout is set so",
		defaultTTL: "as long as the connection stays open (the SDK's default http.Client has no timeout)",
		raise:      "set HTTPOptions.Timeout to genai.Ptr(%s), above the gateway's total, so that the gateway's clean answer or 504 arrives first",
	}
)

// resends says why a cloud SDK's retries multiply the gateway's, sending
// each call up to sends times.
func (d dialect) resends(sends string) string {
	if sends == "" {
		sends = "several"
	}
	return fmt.Sprintf("%s does not read the gateway's x-should-retry: false, so it sends each call up to %s times, "+
		"retrying even the gateway's final answers (a 503, 504 or 429 after the gateway's own retries), each retry starting the gateway's retries again", d.cloud, sends)
}

// attemptsIssue returns the retries finding for a client of a cloud SDK
// whose setting v counts attempts (1: no retry): none when v is 1 or
// less, or not known; def is how many attempts the SDK makes when v is
// unset, "" when it then makes one.
func attemptsIssue(line int, client, call string, v value, def string, words *dialect) []issue {
	is := issue{line: line, client: client, call: call, words: words}
	switch {
	case v.kind == vUnset || v.kind == vNull:
		if def == "" {
			return nil
		}
		is.problem, is.sends = pRetries, def
	case v.kind == vNum && v.num > 1:
		is.problem, is.retries, is.sends = pRetriesOn, v.text, attempts(v)
	default:
		return nil
	}
	return []issue{is}
}

// attempts writes a whole number of attempts, "" when v is not one.
func attempts(v value) string {
	if v.num != float64(int64(v.num)) || v.num > 1e6 {
		return ""
	}
	return fmt.Sprint(int64(v.num))
}

// cloudIssues returns the findings for one client of a cloud SDK: its
// retries issues, then those of its timeout (see clientIssues), all worded
// by words.
func cloudIssues(line int, client, call string, retries []issue, timeout value, nullUnset bool, unit time.Duration, words *dialect) []issue {
	out := append(retries, clientIssues(line, client, call, value{kind: vNum}, timeout, nullUnset, unit)...)
	for i := range out {
		out[i].words = words
	}
	return out
}
