package fake

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Kind says what a Step does.
type Kind uint8

const (
	// Respond answers with Step.Status: a normal answer (streamed when the
	// request asks) for 2xx, the dialect's error body for 4xx and 5xx.
	Respond Kind = iota
	// Hang sends nothing; it returns when the client leaves or the Provider
	// is closed.
	Hang
	// Reset aborts the TCP connection with a RST before any response.
	Reset
	// Slow waits Step.Delay, then answers 200.
	Slow
	// Stream sends a 200 event stream, even to a request that did not ask
	// for one, ending as Step.End says.
	Stream
	// Partial sends a 200 and part of the answer, then ends as Step.End
	// says (Stall or Cut): a stream's first 2 events (its first text
	// included), or a JSON answer's headers, with its full Content-Length,
	// and the first half of its body.
	Partial
	// Mix plays one step of Step.Shares, picked at random for each call
	// with the shares' probabilities; the rest answer 200.
	Mix
	// Overloaded answers as an overloaded provider does: a request that
	// asked for a stream gets a 200 event stream whose first event is the
	// dialect's overloaded error (Anthropic's event: error), then its end;
	// any other request gets that error as a plain HTTP error, as the
	// provider sends it (Anthropic 529 overloaded_error; OpenAI, Azure and
	// Gemini 503), so that an SDK raises it instead of reading an event
	// stream as the answer.
	Overloaded
	// Throttled answers as a provider that throttles the call: where the
	// provider throttles inside a stream (Bedrock), a request that asked
	// for a stream gets a 200 event stream whose first event is the
	// throttling error (a throttlingException frame); any other request,
	// and every request of the other dialects, gets a plain 429 in the
	// dialect's shape.
	Throttled
)

// End says how a Stream step ends.
type End uint8

const (
	// Done sends the whole answer and the stream's clean end.
	Done End = iota
	// Stall sends Step.After events, then holds the connection open and
	// silent until the client leaves or the Provider is closed.
	Stall
	// Cut sends Step.After events, then closes the connection without the
	// stream's end, so that the client reads an unexpected EOF.
	Cut
	// Fail sends Step.After events, then an overloaded error event in the
	// dialect's shape, then ends the stream cleanly.
	Fail
)

// Hint is a retry hint header that a Respond step sends.
type Hint struct {
	// Name is the hint as the script names it: "retry-after" (Retry-After
	// in seconds), "retry-after-ms" (retry-after-ms in milliseconds),
	// "retry-after-date" (Retry-After as an HTTP date at least Value
	// seconds ahead) or "should-retry" (x-should-retry).
	Name string
	// Value is a whole number, or "true" or "false" for should-retry.
	Value string
}

// Step is one step of a script: what the Provider does with one call.
type Step struct {
	// Kind says what the step does.
	Kind Kind
	// Status is the HTTP status of a Respond step: 2xx, 4xx or 5xx.
	Status int
	// Error names an error body other than the status's usual one, for a
	// Respond step with a 4xx or 5xx status: "insufficient_quota",
	// "context_length_exceeded", "content_policy" or "model_not_ready"
	// (Bedrock's ModelNotReadyException; the usual body elsewhere). If
	// empty, the usual.
	Error string
	// Hints are the retry hint headers of a Respond step, in script order.
	Hints []Hint
	// Delay is how long a Slow step waits before answering.
	Delay time.Duration
	// End says how a Stream step ends. If zero, Done.
	End End
	// After is how many events a Stream step ending in Stall, Cut or Fail
	// sends before that end.
	After int
	// Events is the number of text events in a Stream step's answer. If
	// zero, Provider.Events.
	Events int
	// Interval is the pause between a Stream step's events. If zero,
	// Provider.Interval.
	Interval time.Duration
	// KeepAlives is the number of SSE comment lines (": OPENROUTER
	// PROCESSING") a Stream step sends before its first event, each after
	// an Interval: a model still queued. They are no event.
	KeepAlives int
	// Shares are a Mix step's steps and their shares of calls, at most
	// 100 % in all.
	Shares []Share
	// Seed seeds a Mix step's random picks: a Provider plays the same
	// sequence of picks for the same seed. If zero, 0.
	Seed uint64
}

// maxCount bounds the numbers a script may give for events, so that a
// script cannot make the Provider build an endless answer.
const maxCount = 100_000

// maxHint bounds the numbers a retry hint may give.
const maxHint = 1_000_000_000

var (
	errWant = errors.New("want a status (e.g. 503), hang, reset, stall, cut, slow:DUR, overloaded, throttled, stream:... or mix:...")

	errorKinds = []string{"insufficient_quota", "context_length_exceeded", "content_policy", "model_not_ready"}
	hintNames  = []string{"retry-after", "retry-after-ms", "retry-after-date", "should-retry"}
	ends       = map[string]End{"stall-after": Stall, "cut-after": Cut, "error-after": Fail}
	endNames   = map[End]string{Stall: "stall-after", Cut: "cut-after", Fail: "error-after"}
)

// ParseScript parses a script: steps separated by commas, such as
// "503,503,200" or "429:retry-after=2,200". An empty script is "200". The
// step forms are described in the package documentation.
func ParseScript(s string) ([]Step, error) {
	if strings.TrimSpace(s) == "" {
		return []Step{{Kind: Respond, Status: http.StatusOK}}, nil
	}
	parts := strings.Split(s, ",")
	steps := make([]Step, 0, len(parts))
	for i, part := range parts {
		part = strings.TrimSpace(part)
		st, err := parseStep(part)
		if err != nil {
			return nil, fmt.Errorf("fake: script step %d %q: %w", i+1, part, err)
		}
		steps = append(steps, st)
	}
	return steps, nil
}

func parseStep(s string) (Step, error) {
	head, rest, hasMods := strings.Cut(s, ":")
	head, rest = strings.TrimSpace(head), strings.TrimSpace(rest)
	switch head {
	case "hang", "reset", "overloaded", "throttled", "stall", "cut":
		if hasMods {
			return Step{}, fmt.Errorf("%s takes no modifiers", head)
		}
		return map[string]Step{
			"hang":       {Kind: Hang},
			"reset":      {Kind: Reset},
			"overloaded": {Kind: Overloaded},
			"throttled":  {Kind: Throttled},
			"stall":      {Kind: Partial, End: Stall},
			"cut":        {Kind: Partial, End: Cut},
		}[head], nil
	case "mix":
		mods, err := modifiers(rest, hasMods)
		if err != nil {
			return Step{}, err
		}
		return parseMix(mods)
	case "slow":
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return Step{}, errors.New("want slow:DUR with a duration such as 16s or 50ms")
		}
		return Step{Kind: Slow, Delay: d}, nil
	case "stream":
		mods, err := modifiers(rest, hasMods)
		if err != nil {
			return Step{}, err
		}
		return parseStream(mods)
	}
	code, err := status(head)
	if err != nil {
		return Step{}, err
	}
	mods, err := modifiers(rest, hasMods)
	if err != nil {
		return Step{}, err
	}
	return parseStatus(code, mods)
}

// modifier is one name or name=value after a step's colon.
type modifier struct {
	name, value string
	hasValue    bool
}

// modifiers splits the text after a step's colon at semicolons.
func modifiers(s string, present bool) ([]modifier, error) {
	if !present {
		return nil, nil
	}
	var mods []modifier
	for m := range strings.SplitSeq(s, ";") {
		name, value, hasValue := strings.Cut(strings.TrimSpace(m), "=")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if name == "" {
			return nil, errors.New(`empty modifier; write NAME or NAME=VALUE, separated by ";"`)
		}
		if slices.ContainsFunc(mods, func(o modifier) bool { return o.name == name }) {
			return nil, fmt.Errorf("modifier %s given twice; keep one", name)
		}
		mods = append(mods, modifier{name, value, hasValue})
	}
	return mods, nil
}

// status parses a step's HTTP status.
func status(head string) (int, error) {
	code, err := strconv.Atoi(head)
	if err != nil || strconv.Itoa(code) != head {
		return 0, errWant
	}
	if code < 200 || code > 599 || code/100 == 3 {
		return 0, fmt.Errorf("status %d: want a 2xx, 4xx or 5xx status", code)
	}
	return code, nil
}

func parseStatus(code int, mods []modifier) (Step, error) {
	st := Step{Kind: Respond, Status: code}
	for _, m := range mods {
		switch {
		case slices.Contains(errorKinds, m.name) && !m.hasValue:
			if code < 400 {
				return Step{}, fmt.Errorf("%s needs a 4xx or 5xx status", m.name)
			}
			if st.Error != "" {
				return Step{}, fmt.Errorf("%s and %s both name the error; keep one", st.Error, m.name)
			}
			st.Error = m.name
		case slices.Contains(hintNames, m.name) && m.hasValue:
			v, err := hintValue(m)
			if err != nil {
				return Step{}, err
			}
			st.Hints = append(st.Hints, Hint{Name: m.name, Value: v})
		default:
			return Step{}, fmt.Errorf("unknown modifier %q; want retry-after=N, retry-after-ms=N, "+
				"retry-after-date=N, should-retry=BOOL, insufficient_quota, context_length_exceeded, "+
				"content_policy or model_not_ready", m.name)
		}
	}
	return st, nil
}

// hintValue checks a hint's value and returns it in its canonical form.
func hintValue(m modifier) (string, error) {
	if m.name == "should-retry" {
		b, err := strconv.ParseBool(m.value)
		if err != nil {
			return "", fmt.Errorf("should-retry=%s: want true or false", m.value)
		}
		return strconv.FormatBool(b), nil
	}
	n, err := strconv.Atoi(m.value)
	if err != nil || n < 0 || n > maxHint {
		return "", fmt.Errorf("%s=%s: want a whole number from 0 to %d", m.name, m.value, maxHint)
	}
	return strconv.Itoa(n), nil
}

func parseStream(mods []modifier) (Step, error) {
	st := Step{Kind: Stream}
	for _, m := range mods {
		if !m.hasValue {
			return Step{}, fmt.Errorf("stream modifier %q needs a value; want events=N, interval=DUR, "+
				"keepalive=N, stall-after=N, cut-after=N or error-after=N", m.name)
		}
		var err error
		switch m.name {
		case "events":
			st.Events, err = count(m, 1)
		case "keepalive":
			st.KeepAlives, err = count(m, 1)
		case "interval":
			st.Interval, err = time.ParseDuration(m.value)
			if err != nil || st.Interval < 0 {
				err = fmt.Errorf("interval=%s: want a duration such as 20ms", m.value)
			}
		case "stall-after", "cut-after", "error-after":
			if st.End != Done {
				return Step{}, fmt.Errorf("%s and %s both end the stream; keep one", endNames[st.End], m.name)
			}
			st.End = ends[m.name]
			st.After, err = count(m, 0)
		default:
			err = fmt.Errorf("unknown stream modifier %q; want events=N, interval=DUR, "+
				"keepalive=N, stall-after=N, cut-after=N or error-after=N", m.name)
		}
		if err != nil {
			return Step{}, err
		}
	}
	return st, nil
}

// count parses a modifier's whole number from least to maxCount.
func count(m modifier, least int) (int, error) {
	n, err := strconv.Atoi(m.value)
	if err != nil || n < least || n > maxCount {
		return 0, fmt.Errorf("%s=%s: want a whole number from %d to %d", m.name, m.value, least, maxCount)
	}
	return n, nil
}

// String returns the step in the form ParseScript reads, so that
// ParseScript(s.String()) gives back s.
func (s Step) String() string {
	switch s.Kind {
	case Hang:
		return "hang"
	case Reset:
		return "reset"
	case Slow:
		return "slow:" + s.Delay.String()
	case Stream:
		return s.streamString()
	case Partial:
		if s.End == Cut {
			return "cut"
		}
		return "stall"
	case Mix:
		return s.mixString()
	case Overloaded:
		return "overloaded"
	case Throttled:
		return "throttled"
	}
	var mods []string
	if s.Error != "" {
		mods = append(mods, s.Error)
	}
	for _, h := range s.Hints {
		mods = append(mods, h.Name+"="+h.Value)
	}
	return joinMods(strconv.Itoa(s.Status), mods)
}

func (s Step) streamString() string {
	var mods []string
	if s.Events != 0 {
		mods = append(mods, "events="+strconv.Itoa(s.Events))
	}
	if s.Interval != 0 {
		mods = append(mods, "interval="+s.Interval.String())
	}
	if s.KeepAlives != 0 {
		mods = append(mods, "keepalive="+strconv.Itoa(s.KeepAlives))
	}
	if s.End != Done {
		mods = append(mods, endNames[s.End]+"="+strconv.Itoa(s.After))
	}
	return joinMods("stream", mods)
}

func joinMods(head string, mods []string) string {
	if len(mods) == 0 {
		return head
	}
	return head + ":" + strings.Join(mods, ";")
}
