package report

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// The waits for a slot are split by priority, interactive first, over
// every admitted attempt (0 included), with the refusals of each; in the
// text, the HTML and the JSON alike.
func TestQueuedByPriority(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var lines []Line
	add := func(p string, queued float64, outcome string, refused int) {
		lines = append(lines, Line{TS: t0.Add(time.Duration(len(lines)) * time.Second), RequestID: "r" + string(rune('a'+len(lines))),
			Attempt: 1, Provider: "openai", Status: 200, Outcome: "ok", QueuedMS: queued, Priority: p})
		if outcome != "" {
			l := &lines[len(lines)-1]
			l.Outcome, l.Status, l.Refused, l.QueuedMS = "rate_limited", 0, refused, 0
		}
	}
	for _, q := range []float64{0, 0, 400, 600, 1000} {
		add("interactive", q, "", 0)
	}
	for _, q := range []float64{20000, 25000, 30000} {
		add("batch", q, "", 0)
	}
	add("batch", 0, "rate_limited", 3)
	add("", 50, "", 0) // a line from before priorities: not split
	s := Summarize(lines)
	got := s.Queued.ByPriority
	if len(got) != 2 {
		t.Fatalf("by priority %+v, want interactive and batch", got)
	}
	i, b := got[0], got[1]
	if i.Priority != "interactive" || i.Attempts != 5 || i.Waited != 3 || i.WaitSumMS != 2000 || i.WaitP50MS != 400 || i.WaitMaxMS != 1000 || i.Refused != 0 {
		t.Errorf("interactive %+v", i)
	}
	if b.Priority != "batch" || b.Attempts != 3 || b.Waited != 3 || b.WaitSumMS != 75000 || b.WaitMaxMS != 30000 || b.Refused != 3 {
		t.Errorf("batch %+v", b)
	}
	var text strings.Builder
	WriteText(&text, &s)
	if !strings.Contains(text.String(), "interactive 5 attempts, 3 waited") || !strings.Contains(text.String(), "batch       3 attempts, 3 waited") {
		t.Errorf("text report:\n%s", text.String())
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, &s); err != nil || !strings.Contains(html.String(), "<td class=\"l\">batch</td><td>3</td>") {
		t.Errorf("HTML report (%v) lacks the batch row", err)
	}
}
