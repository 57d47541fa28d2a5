package main

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"

	"github.com/sluice-llm/sluice/fake"
)

// logLine is the part of an attempt-log line the soak reads.
type logLine struct {
	RequestID string `json:"request_id"`
	Attempt   int    `json:"attempt"`
	Status    int    `json:"status"`
	Outcome   string `json:"outcome"`
	Error     string `json:"error"`
	Stream    bool   `json:"stream"`
}

// refused are the outcomes of attempts that were never sent upstream.
var refused = []string{"circuit_open", "budget_exhausted"}

// logCheck compares the attempt log with what the fake received.
type logCheck struct {
	Lines         int                       `json:"lines"`
	Unparsed      int                       `json:"unparsed_lines"`
	Bytes         int64                     `json:"bytes"`
	SentLines     int                       `json:"sent_lines"` // lines of attempts that reached upstream (not circuit_open / budget_exhausted)
	UpstreamCalls int                       `json:"upstream_attempts"`
	Calls         int                       `json:"calls_upstream"` // distinct request ids the fake saw
	Outcomes      map[string]int            `json:"outcomes"`
	Statuses      map[string]int            `json:"statuses"`
	RetryLines    int                       `json:"retry_lines"`
	ActualRetries int                       `json:"actual_retries"` // upstream attempts beyond each call's first, by the fake
	RetryNoNext   int                       `json:"retry_lines_without_next_attempt"`
	Unlogged      int                       `json:"upstream_attempts_without_line"` // a request id's attempts the log has fewer lines of
	Phantom       int                       `json:"sent_lines_without_upstream_attempt"`
	ByStep        map[string]map[string]int `json:"outcome_by_fake_step"` // what the fake played → the log's outcome, paired in order per request id
	FakePlayed    map[string]int            `json:"fake_played"`
}

// readLog reads the attempt log's lines.
func readLog(r io.Reader) (lines []logLine, unparsed int, size int64, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		size += int64(len(sc.Bytes())) + 1
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			unparsed++
			continue
		}
		lines = append(lines, l)
	}
	return lines, unparsed, size, sc.Err()
}

// checkLog pairs the log's lines with the fake's requests by request id
// (X-Request-Id upstream, request_id in the log), in order.
func checkLog(lines []logLine, reqs []fake.Request, played map[string]int) logCheck {
	c := logCheck{Lines: len(lines), UpstreamCalls: len(reqs), Outcomes: map[string]int{}, Statuses: map[string]int{},
		ByStep: map[string]map[string]int{}, FakePlayed: played}
	steps := map[string][]string{} // request id → steps the fake played, in arrival order
	for _, r := range reqs {
		id := r.Header.Get("X-Request-Id")
		steps[id] = append(steps[id], r.Step)
	}
	c.Calls = len(steps)
	c.ActualRetries = len(reqs) - len(steps)
	sent := map[string][]logLine{}
	attempts := map[string][]int{}
	for _, l := range lines {
		c.Outcomes[l.Outcome]++
		c.Statuses[itoa(l.Status)]++
		attempts[l.RequestID] = append(attempts[l.RequestID], l.Attempt)
		if l.Outcome == "retry" {
			c.RetryLines++
		}
		if slices.Contains(refused, l.Outcome) {
			continue
		}
		c.SentLines++
		sent[l.RequestID] = append(sent[l.RequestID], l)
	}
	for _, l := range lines {
		if l.Outcome == "retry" && !slices.Contains(attempts[l.RequestID], l.Attempt+1) {
			c.RetryNoNext++
		}
	}
	for id, ls := range sent {
		slices.SortFunc(ls, func(a, b logLine) int { return a.Attempt - b.Attempt })
		played := steps[id]
		for i, l := range ls {
			if i >= len(played) {
				c.Phantom++
				continue
			}
			if c.ByStep[played[i]] == nil {
				c.ByStep[played[i]] = map[string]int{}
			}
			c.ByStep[played[i]][l.Outcome]++
		}
	}
	for id, played := range steps {
		c.Unlogged += max(0, len(played)-len(sent[id]))
	}
	return c
}
