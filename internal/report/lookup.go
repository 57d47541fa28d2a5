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
// the log holds of it, in order, and the attempt it ended on.
type Call struct {
	RequestID string `json:"request_id"`
	// Found is false when no line of the log names the call.
	Found bool `json:"found"`
	// Result is the outcome of the attempt the call ended on, counted as
	// every figure of the report counts it (see Summary.CallResults).
	Result string `json:"result,omitempty"`
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

// lookup returns the call id of lines, sorted by time or not.
func lookup(lines []Line, id string) Call {
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
			c.Found, c.Result = true, string(e.last.Outcome)
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
		_, err := fmt.Fprintf(w, "sluice report: no attempt of call %s in the log\n", c.RequestID)
		return err
	}
	var b strings.Builder
	word := "attempts"
	if len(c.Attempts) == 1 {
		word = "attempt"
	}
	fmt.Fprintf(&b, "sluice report: call %s: %d %s, ended on %s\n", c.RequestID, len(c.Attempts), word, c.Result)
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
