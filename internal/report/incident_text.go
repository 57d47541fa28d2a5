package report

import (
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
)

// writeIncident writes the opening view: which calls failed, since when,
// at which provider.
func writeIncident(b *bytes.Buffer, s *Summary) {
	in := &s.Incident
	if in.FailedCalls == 0 {
		fmt.Fprintf(b, "\nFAILED CALLS: none of %d\n", in.Calls)
		return
	}
	fmt.Fprintf(b, "\nFAILED CALLS: %d of %d (%s)\n", in.FailedCalls, in.Calls, pct(share(in.FailedCalls, in.Calls)))
	for _, p := range in.Providers {
		fmt.Fprintf(b, "  %s: %d of %d calls failed, first %s, last %s; ", orDash(p.Provider),
			p.FailedCalls, p.Calls, stamp(p.First), stamp(p.Last))
		switch {
		case p.Failing && p.LastOK.IsZero():
			fmt.Fprintf(b, "failing since %s, no ok call in the log\n", stamp(p.Since))
		case p.Failing:
			fmt.Fprintf(b, "failing since %s (last ok call %s)\n", stamp(p.Since), stamp(p.LastOK))
		default:
			fmt.Fprintf(b, "ok again since %s\n", stamp(p.LastOK))
		}
		writeCounts(b, "    ended on", p.Classes, same)
	}
}

// writeFailures writes why attempts failed, per reason and provider, with
// sample request ids.
func writeFailures(b *bytes.Buffer, s *Summary) {
	b.WriteString("\nFAILURES by reason and provider (calls: ended on it; attempts: retried or not)\n")
	if len(s.Failures) == 0 {
		b.WriteString("  none\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "  reason\tprovider\tcalls\tattempts\tfirst\tlast\tsample request ids\n")
	for _, f := range s.Failures {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%s\t%s\t%s\n", f.Class, orDash(f.Provider), f.Calls,
			f.Attempts, stamp(f.First), stamp(f.Last), strings.Join(f.Samples, " "))
	}
	tw.Flush()
}

// fmtUSD formats dollars with four significant digits and at least two
// decimals, never in exponent form: 1.266, 0.1236, 0.00000615.
func fmtUSD(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return "0.00"
	}
	decimals := 3 - int(math.Floor(math.Log10(math.Abs(v))))
	decimals = min(max(decimals, 2), 12)
	out := strconv.FormatFloat(v, 'f', decimals, 64)
	if decimals > 2 {
		out = strings.TrimRight(out, "0")
		if i := strings.IndexByte(out, '.'); len(out)-i-1 < 2 {
			out += strings.Repeat("0", 2-(len(out)-i-1))
		}
	}
	return out
}
