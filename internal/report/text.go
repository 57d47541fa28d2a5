package report

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText writes s as the terminal report: one section per figure, with
// the 429s by minute of the hour drawn as a bar chart.
func WriteText(w io.Writer, s *Summary) error {
	var b bytes.Buffer
	writeHeader(&b, s)
	if s.Calls > 0 {
		writeIncident(&b, s)
		writeFailures(&b, s)
		writeCalls(&b, s)
		writeLatency(&b, s)
		writeRetries(&b, s)
		writeQueued(&b, s)
		writeKeys(&b, s)
		writeOpenings(&b, s)
		writeSpend(&b, s)
		writeMinutes(&b, &s.RateLimited)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// stamp formats t as RFC 3339 in UTC, to the second.
func stamp(t time.Time) string {
	return t.UTC().Format(time.RFC3339)
}

// fmtMS formats milliseconds as a rounded duration.
func fmtMS(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}

// pct formats a share (0 to 1) as a percentage.
func pct(f float64) string {
	return fmt.Sprintf("%.1f%%", f*100)
}

func writeHeader(b *bytes.Buffer, s *Summary) {
	fmt.Fprintf(b, "sluice report: %d attempts, %d calls", s.Attempts, s.Calls)
	if s.Calls > 0 {
		fmt.Fprintf(b, ", %s … %s (%s)", stamp(s.From), stamp(s.To), s.To.Sub(s.From).Round(time.Second))
	}
	b.WriteString("\n")
	for _, in := range s.Inputs {
		fmt.Fprintf(b, "  input %s: %d lines", in.Name, in.Lines)
		if in.Malformed > 0 {
			fmt.Fprintf(b, ", %d malformed skipped", in.Malformed)
		}
		if in.Truncated {
			b.WriteString(", gzip stream cut short (lines before the cut used)")
		}
		b.WriteString("\n")
	}
	if s.OutsideWindow > 0 {
		fmt.Fprintf(b, "  %d attempts outside --since/--until left out\n", s.OutsideWindow)
	}
	if s.Calls == 0 {
		b.WriteString("  no attempts to report\n")
	}
}

// writeCounts writes a labelled list of counts, wrapped to the terminal.
func writeCounts(b *bytes.Buffer, label string, cs []Count, name func(string) string) {
	line := fmt.Sprintf("  %-18s", label)
	pad := strings.Repeat(" ", len(line))
	for i, c := range cs {
		item := fmt.Sprintf("%s: %d (%s)", name(c.Key), c.N, pct(c.Share))
		if i > 0 && len(line)+len(item)+3 > 100 {
			b.WriteString(strings.TrimRight(line, " ") + "\n")
			line = pad
		} else if i > 0 {
			line += "   "
		}
		line += item
	}
	b.WriteString(strings.TrimRight(line, " ") + "\n")
}

func same(k string) string { return k }

func statusName(k string) string {
	if k == "0" {
		return "none"
	}
	return k
}

func writeCalls(b *bytes.Buffer, s *Summary) {
	pc := s.AttemptsPerCall
	fmt.Fprintf(b, "\nCALLS\n  %d calls, %d attempts (%d upstream, %d refused): %.2f upstream attempts per call (Sluice-Attempts), at most %d\n",
		s.Calls, s.Attempts, s.Upstream, s.Attempts-s.Upstream, pc.Mean, pc.Max)
	all, ok, replayed := s.answered()
	fmt.Fprintf(b, "  answered %s (ok %s, replayed %s)\n", pct(all), pct(ok), pct(replayed))
	writeCounts(b, "attempts per call", pc.Hist, same)
	writeCounts(b, "call results", s.CallResults, same)
	writeCounts(b, "attempt outcomes", s.Outcomes, same)
	writeCounts(b, "statuses", s.Statuses, statusName)
}

func writeLatency(b *bytes.Buffer, s *Summary) {
	b.WriteString("\nLATENCY in ms, nearest-rank percentiles (ttfb: time to first byte)\n")
	pw, mw := len("provider"), len("model")
	for _, l := range s.Latency {
		pw, mw = max(pw, len(orDash(l.Provider))), max(mw, len(orDash(l.Model)))
	}
	names := func(p, m string) string { return fmt.Sprintf("%-*s  %-*s", pw, p, mw, m) }
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s\tn\tp50\tp95\tp99\tmax\tttfb n\tp50\tp95\tp99\t\n", names("provider", "model"))
	row := func(p, m string, l Latency) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%.1f\t%.1f\t%.1f\t\n", names(p, m),
			l.Latency.N, l.Latency.P50, l.Latency.P95, l.Latency.P99, l.Latency.Max,
			l.TTFB.N, l.TTFB.P50, l.TTFB.P95, l.TTFB.P99)
	}
	row("all", "all", s.Overall)
	for _, l := range s.Latency {
		row(orDash(l.Provider), orDash(l.Model), l)
	}
	tw.Flush()
}

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeRetries(b *bytes.Buffer, s *Summary) {
	r := s.Retries
	b.WriteString("\nRETRIES\n")
	if r.Count == 0 {
		b.WriteString("  none\n")
		return
	}
	fmt.Fprintf(b, "  %d attempts retried; waited %s in all (p50 %s, max %s)\n",
		r.Count, fmtMS(r.WaitSumMS), fmtMS(r.WaitP50MS), fmtMS(r.WaitMaxMS))
	writeCounts(b, "retried after", r.After, same)
}

func writeQueued(b *bytes.Buffer, s *Summary) {
	q := s.Queued
	if q.Count == 0 && q.Refused == 0 {
		return // no rate limit held anything: no section
	}
	b.WriteString("\nQUEUED FOR A RATE-LIMIT SLOT\n")
	if q.Count > 0 {
		fmt.Fprintf(b, "  %d attempts waited %s in all (p50 %s, p99 %s, max %s)\n",
			q.Count, fmtMS(q.WaitSumMS), fmtMS(q.WaitP50MS), fmtMS(q.WaitP99MS), fmtMS(q.WaitMaxMS))
	}
	if q.Refused > 0 {
		fmt.Fprintf(b, "  %d calls refused: their turn was further than their max_queue (429 rate_limited)\n", q.Refused)
	}
	writeQueuedByPriority(b, q.ByPriority)
}

// writeKeys writes the pool keys' table: only when a line named a key.
func writeKeys(b *bytes.Buffer, s *Summary) {
	if len(s.Keys) == 0 {
		return // no provider has a pool: no section
	}
	b.WriteString("\nKEYS: 429s and quota by pool key (sha-256 prefix)\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "  provider\tkey\tattempts\tok\trate_limited\tquota\tother\tlast 429\n")
	for _, k := range s.Keys {
		fmt.Fprintf(tw, "  %s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", orDash(k.Provider), k.Key,
			k.Attempts, k.OK, k.RateLimited, k.Quota, k.Other, stampOrDash(k.Last429))
	}
	tw.Flush()
	if s.KeysLeftOut > 0 {
		fmt.Fprintf(b, "  (%d more keys)\n", s.KeysLeftOut)
	}
}

// stampOrDash formats t as stamp does, or "-" when it is zero.
func stampOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return stamp(t)
}

// why formats the attempts before an opening: "5× 503".
func why(cs []Count) string {
	if len(cs) == 0 {
		return "(no earlier attempts in the log)"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = fmt.Sprintf("%d× %s", c.N, c.Key)
	}
	return strings.Join(parts, ", ")
}

func writeOpenings(b *bytes.Buffer, s *Summary) {
	fmt.Fprintf(b, "\nBREAKER OPENINGS: %d\n", len(s.Openings))
	if len(s.Openings) == 0 {
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprint(tw, "  provider\topened\tclosed\tlasted\tfailed fast\tprobes\tafter\n")
	for _, o := range s.Openings {
		closed := stamp(o.End)
		if o.Ongoing {
			closed = "still open at end"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d calls (%d attempts)\t%d (%d failed)\t%s\n",
			orDash(o.Provider), stamp(o.Start), closed, fmtMS(o.DurationMS),
			o.CallsFailedFast, o.FastFails, len(o.Probes), o.FailedProbes, why(o.Before))
	}
	tw.Flush()
}

func writeSpend(b *bytes.Buffer, s *Summary) {
	fmt.Fprintf(b, "\nSPEND: %s USD\n", fmtUSD(s.SpendUSD))
	if r := s.Replays; r.Calls > 0 {
		fmt.Fprintf(b, "  replayed from kept answers (Idempotency-Key): %d calls, %s USD not spent again", r.Calls, fmtUSD(r.SavedUSD))
		if r.Unpriced > 0 {
			fmt.Fprintf(b, " (%d whose first call this log does not hold)", r.Unpriced)
		}
		b.WriteString("\n")
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, sp := range s.Spend {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", orDash(sp.Provider), orDash(sp.Model), fmtUSD(sp.USD))
	}
	tw.Flush()
}
