package audit

import "fmt"

// dialect holds the words a language's SDKs use, for messages.
type dialect struct {
	retries    string // how the retries option is named, e.g. "max_retries"
	setsN      string // how setting it to %s reads, e.g. "sets max_retries=%s"
	setRetries string // the fix for retries
	setTimeout string // the fix for a missing timeout
	noTimeout  string // how turning the timeout off reads, "" when it cannot be
	defaultTTL string // the SDK's default timeout, for messages
}

var (
	python = dialect{
		retries:    "max_retries",
		setsN:      "sets max_retries=%s",
		setRetries: "pass max_retries=0 and let the gateway retry",
		setTimeout: "pass timeout=… in seconds (a number or an httpx.Timeout), no longer than the gateway's total",
		noTimeout:  "turns the timeout off (None)",
		defaultTTL: "the SDK default of 10 minutes",
	}
	javascript = dialect{
		retries:    "maxRetries",
		setsN:      "sets maxRetries: %s",
		setRetries: "pass maxRetries: 0 and let the gateway retry",
		setTimeout: "pass timeout: … in milliseconds, no longer than the gateway's total",
		defaultTTL: "the SDK default of 10 minutes",
	}
	golang = dialect{
		retries:    "the retry count",
		setsN:      "passes option.WithMaxRetries(%s)",
		setRetries: "pass option.WithMaxRetries(0) and let the gateway retry",
		setTimeout: "pass option.WithRequestTimeout(…), or option.WithHTTPClient with a client whose Timeout is set",
		defaultTTL: "as long as the SDK allows",
	}
)

// finding words an issue found in file.
func (d dialect) finding(file string, is issue) Finding {
	f := Finding{File: file, Line: is.line, Client: is.client}
	switch is.problem {
	case pRetries:
		f.Problem = fmt.Sprintf("%s leaves %s at the SDK default of 2, so each gateway attempt can become 3 calls", is.call, d.retries)
		f.Fix = d.setRetries
	case pRetriesOn:
		f.Problem = is.call + " " + fmt.Sprintf(d.setsN, is.retries)
		if n := calls(is.retries); n != "" {
			f.Problem += ", so each gateway attempt can become " + n + " calls"
		}
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
