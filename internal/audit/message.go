package audit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// TimeoutMargin is how far above the gateway's total timeout the audit
// advises an SDK's own timeout to be (with the SDK's retries at 0): far
// enough that the gateway's clean 504 reaches the caller before the SDK
// gives up on its own.
const TimeoutMargin = 5 * time.Second

// aboveTotal is the timeout advice, in words.
var aboveTotal = fmt.Sprintf("a little above the gateway's total (e.g. total + %d s)", int(TimeoutMargin/time.Second))

// dialect holds the words a language's SDKs use, for messages.
type dialect struct {
	retries    string // how the retries option is named, e.g. "max_retries"
	setsN      string // how setting it to %s reads, e.g. "sets max_retries=%s"
	setRetries string // the fix for retries
	setTimeout string // the fix for a missing timeout
	noTimeout  string // how turning the timeout off reads, "" when it cannot be
	defaultTTL string // the SDK's default timeout, for messages
	// raise is the fix for a timeout not above the gateway's total, with
	// %s for the timeout to give, written in unit (0: a Go duration).
	raise string
	unit  time.Duration
	// cloud names the SDK family when it does not read x-should-retry (the
	// AWS SDKs, google-genai): it retries the gateway's own final answers,
	// and its retries option counts attempts. "" for the OpenAI and
	// Anthropic SDKs, which obey the header.
	cloud string
	// defaultRetries is the SDK's default retry setting, in words, for a
	// cloud SDK: "the SDK default of 3 attempts".
	defaultRetries string
}

var (
	python = dialect{
		retries:    "max_retries",
		setsN:      "sets max_retries=%s",
		setRetries: "pass max_retries=0 and let the gateway retry",
		setTimeout: "pass timeout=… in seconds (a number or an httpx.Timeout) " + aboveTotal +
			", with max_retries=0, so that the gateway's clean 504 arrives first",
		noTimeout:  "turns the timeout off (None)",
		defaultTTL: "the SDK default of 10 minutes",
		raise:      "pass timeout=%s (seconds), above the gateway's total, with max_retries=0, so that the gateway's clean answer or 504 arrives first",
		unit:       time.Second,
	}
	javascript = dialect{
		retries:    "maxRetries",
		setsN:      "sets maxRetries: %s",
		setRetries: "pass maxRetries: 0 and let the gateway retry",
		setTimeout: "pass timeout: … in milliseconds " + aboveTotal +
			", with maxRetries: 0, so that the gateway's clean 504 arrives first",
		defaultTTL: "the SDK default of 10 minutes",
		raise:      "pass timeout: %s (milliseconds), above the gateway's total, with maxRetries: 0, so that the gateway's clean answer or 504 arrives first",
		unit:       time.Millisecond,
	}
	golang = dialect{
		retries:    "the retry count",
		setsN:      "passes option.WithMaxRetries(%s)",
		setRetries: "pass option.WithMaxRetries(0) and let the gateway retry",
		setTimeout: "pass option.WithRequestTimeout(…) " + aboveTotal +
			", with option.WithMaxRetries(0), so that the gateway's clean 504 arrives first; or option.WithHTTPClient with a client whose Timeout is set so",
		defaultTTL: "as long as the SDK allows",
		raise:      "pass option.WithRequestTimeout(%s), above the gateway's total, with option.WithMaxRetries(0), so that the gateway's clean answer or 504 arrives first",
	}
	// goOpenAI words the findings for github.com/sashabaranov/go-openai,
	// which never retries and reads no base-URL variable.
	goOpenAI = dialect{
		setTimeout: "build it with openai.NewClientWithConfig, setting config.HTTPClient = &http.Client{Timeout: …} " + aboveTotal +
			" and config.BaseURL to the gateway's route (e.g. http://127.0.0.1:8080/openai/v1): go-openai reads no base-URL variable",
		defaultTTL: "as long as the connection stays open (its default http.Client has no timeout)",
		raise:      "set config.HTTPClient's Timeout to %s, above the gateway's total, so that the gateway's clean answer or 504 arrives first",
	}
)

// finding words an issue found in file.
func (d dialect) finding(file string, is issue) Finding {
	f := Finding{File: file, Line: is.line, Client: is.client}
	switch {
	case d.cloud != "" && is.problem == pRetries:
		f.Problem = fmt.Sprintf("%s leaves %s at %s: %s", is.call, d.retries, d.defaultRetries, d.resends(is.sends))
		f.Fix = d.setRetries
		return f
	case d.cloud != "" && is.problem == pRetriesOn:
		f.Problem = is.call + " " + fmt.Sprintf(d.setsN, is.retries) + ": " + d.resends(is.sends)
		f.Fix = d.setRetries
		return f
	}
	switch is.problem {
	case pRetries:
		f.Problem = fmt.Sprintf("%s leaves %s at the SDK default of 2: the SDK obeys the gateway's x-should-retry: false, but still retries a connection error or its own timeout, sending the call again (up to 3 times) while the gateway may still be working on it", is.call, d.retries)
		f.Fix = d.setRetries
	case pRetriesOn:
		f.Problem = is.call + " " + fmt.Sprintf(d.setsN, is.retries)
		n := calls(is.retries)
		if n == "" {
			n = "more"
		}
		f.Problem += ": the SDK obeys the gateway's x-should-retry: false, but still retries a connection error or its own timeout, sending the call again (up to " + n + " times) while the gateway may still be working on it"
		f.Fix = d.setRetries
	case pTimeout:
		f.Problem = fmt.Sprintf("%s has no explicit timeout, so a stalled call can hold a worker for %s", is.call, d.defaultTTL)
		f.Fix = d.setTimeout
	case pNoTimeout:
		f.Problem = fmt.Sprintf("%s %s, so a stalled call can wait forever", is.call, d.noTimeout)
		f.Fix = d.setTimeout
	}
	return f
}

// shortTimeout words f, a pShortTimeout finding: the client's timeout is
// not above the gateway's total (from names where that comes from).
func (d dialect) shortTimeout(f Finding, is issue, total time.Duration, from string) Finding {
	f.Problem = fmt.Sprintf("%s gives up after %s, before the gateway's total of %s (%s): it abandons calls the gateway is still working on and paying for, and an SDK retry sends each again while the first still runs",
		is.call, fmtDur(is.timeout), fmtDur(total), from)
	if d.cloud == "" {
		f.Problem += " — this, not the gateway's answers (x-should-retry: false), is what multiplies calls"
	} else {
		f.Problem += "; " + d.cloud + " does not read x-should-retry: false, so keep it to one attempt"
	}
	f.Fix = fmt.Sprintf(d.raise, d.amount(total+TimeoutMargin))
	return f
}

// amount writes t as the dialect's timeout option takes it.
func (d dialect) amount(t time.Duration) string {
	if d.unit <= 0 {
		if t%time.Second == 0 {
			return fmt.Sprintf("%d*time.Second", t/time.Second)
		}
		return fmt.Sprintf("%d*time.Millisecond", t/time.Millisecond)
	}
	return strconv.FormatFloat(float64(t)/float64(d.unit), 'f', -1, 64)
}

// fmtDur writes d as a person reads it: 30s, 1m30s, 10m, 1.5s.
func fmtDur(d time.Duration) string {
	s := d.String()
	for _, z := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(s, z) {
			s = strings.TrimSuffix(s, z[1:])
		}
	}
	return s
}
