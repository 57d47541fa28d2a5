package report

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice"
)

// Call is one call as `sluice report --request-id` shows it: the attempts
// the log holds of it, in order, and the answer it returned.
type Call struct {
	// RequestID is the call's request id (Sluice-Request-Id).
	RequestID string `json:"request_id"`
	// UpstreamRequestID is the id asked for when it is not the call's
	// request id but a provider's, the x-request-id of one of its attempts
	// (the log's upstream_request_id), as an SDK shows it.
	UpstreamRequestID string `json:"upstream_request_id,omitempty"`
	// Found is false when no line of the log names the call.
	Found bool `json:"found"`
	// Result is the call's result, counted as every figure of the report
	// counts it (see Summary.CallResults): the answer it returned.
	Result string `json:"result,omitempty"`
	// Upstream is how many of its attempts went upstream, as its
	// Sluice-Attempts header said.
	Upstream int `json:"upstream_attempts"`
	// Answer is the attempt number whose answer the call returned; 0 when
	// not found.
	Answer int `json:"answer_attempt,omitempty"`
	// Attempts are the lines that name the call, in order: its own lines
	// by attempt number, and the folded refusal lines that list it among
	// their refused_ids (whose attempt number and time are those of the
	// first refusal they count) after its retried attempts.
	Attempts []Line `json:"attempts"`
}

// names reports whether l is a line of the call id: its own, or a folded
// refusal line that lists it.
func names(l *Line, id string) bool {
	return l.RequestID == id || slices.Contains(l.RefusedIDs, id)
}

// lookup returns the call of lines, sorted by time or not, that id names:
// its request id, else the upstream request id of one of its attempts.
func lookup(lines []Line, id string) Call {
	if !slices.ContainsFunc(lines, func(l Line) bool { return names(&l, id) }) {
		for _, l := range lines {
			if l.UpstreamRequestID == id && l.RequestID != "" {
				c := lookup(lines, l.RequestID)
				c.UpstreamRequestID = id
				return c
			}
		}
	}
	c := Call{RequestID: id, Attempts: []Line{}}
	var own, listed []Line
	for _, l := range lines {
		switch {
		case l.RequestID == id:
			own = append(own, l)
		case names(&l, id):
			listed = append(listed, l)
		}
	}
	byTime := func(a, b Line) int { return a.TS.Compare(b.TS) }
	slices.SortStableFunc(own, func(a, b Line) int { return cmp.Or(cmp.Compare(a.Attempt, b.Attempt), byTime(a, b)) })
	slices.SortStableFunc(listed, byTime)
	// A listed refusal has no number of its own: it came after the call's
	// retried attempts and before the fallback that followed it (callRec.end).
	i := slices.IndexFunc(own, func(l Line) bool { return l.Outcome != sluice.OutcomeRetry })
	if i < 0 {
		i = len(own)
	}
	c.Attempts = slices.Concat(own[:i], listed, own[i:])
	sorted := slices.SortedStableFunc(slices.Values(c.Attempts), byTime)
	for _, e := range groupCalls(sorted) {
		if e.id == id {
			c.Found, c.Result, c.Upstream, c.Answer = true, e.result, e.upstream, e.last.Attempt
		}
	}
	return c
}

// writeCall prints c as text, or as one JSON object.
func writeCall(w io.Writer, c Call, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(c)
	}
	if !c.Found {
		return nil // Run says so on stderr
	}
	var b strings.Builder
	word := "attempts"
	if c.Upstream == 1 {
		word = "attempt"
	}
	asked := ""
	if c.UpstreamRequestID != "" {
		asked = " (upstream request id " + c.UpstreamRequestID + ")"
	}
	fmt.Fprintf(&b, "sluice report: call %s%s: %d %s upstream (Sluice-Attempts), result %s", c.RequestID, asked, c.Upstream, word, c.Result)
	for _, l := range c.Attempts {
		if l.RequestID == c.RequestID && l.Attempt == c.Answer && wentUpstream(l) {
			fmt.Fprintf(&b, ": the answer of attempt %d", l.Attempt)
			if l.Status != 0 {
				fmt.Fprintf(&b, ", status %d", l.Status)
			}
			if l.UpstreamRequestID != "" {
				fmt.Fprintf(&b, ", x-request-id %s", l.UpstreamRequestID)
			}
			break
		}
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "  attempt\tts\tprovider\tmodel\toutcome\tstatus\terror\tbreaker\tlatency\t\n")
	for _, l := range c.Attempts {
		n, note := strconv.Itoa(l.Attempt), ""
		if l.RequestID != c.RequestID {
			n = "-" // the line's number is its first refusal's
		}
		if k := weight(&l); k > 1 {
			note = fmt.Sprintf("(one of the %d refusals this line counts)", k)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", n, l.TS.UTC().Format(time.RFC3339Nano),
			orDash(l.Provider), orDash(l.Model), orDash(string(l.Outcome)), l.Status, orDash(l.Error),
			orDash(l.Breaker), fmtMS(l.LatencyMS), note)
	}
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}
