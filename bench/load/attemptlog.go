package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"
)

// attemptLogResult is what gateways' attempt logs (JSONL) say about a
// run: outcomes, how long attempts waited for a rate-limit slot, the
// refused calls, and the calls that took longer than their policy's total.
type attemptLogResult struct {
	Mode           string         `json:"mode"`
	Logs           []string       `json:"logs"`
	Lines          int            `json:"lines"`
	Outcomes       map[string]int `json:"outcomes"`         // lines by outcome
	Statuses       map[string]int `json:"statuses"`         // upstream statuses of the attempts sent
	RateLimited    int            `json:"rate_limited"`     // calls refused rate_limited (each line's refused count)
	Attempts       int            `json:"attempts"`         // lines of attempts (not of refusals)
	Waited         int            `json:"attempts_waited"`  // of those, with queued_ms > 0
	QueuedMS       msDist         `json:"queued_ms"`        // over every attempt, 0 included
	QueuedWaitedMS msDist         `json:"queued_ms_waited"` // over the attempts that waited
	Calls          int            `json:"calls"`            // distinct request ids
	TotalMS        float64        `json:"policy_total_ms"`
	OverTotal      int            `json:"calls_over_total"` // first attempt's queue start to last attempt's end > total
	LongestCallMS  float64        `json:"longest_call_ms"`
}

// attemptLine is the part of an attempt log line read here.
type attemptLine struct {
	TS        time.Time `json:"ts"`
	RequestID string    `json:"request_id"`
	Status    int       `json:"status"`
	Outcome   string    `json:"outcome"`
	LatencyMS float64   `json:"latency_ms"`
	QueuedMS  float64   `json:"queued_ms"`
	Refused   int       `json:"refused"`
}

func runAttemptLog(args []string) (any, error) {
	fs := flag.NewFlagSet("attemptlog", flag.ContinueOnError)
	var logs namedList
	fs.Var(&logs, "log", "an attempt log as name=PATH; repeat for each gateway")
	total := fs.Duration("total", 0, "the policy's timeout.total, to find the calls that took longer")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if len(logs.values) == 0 || *total <= 0 {
		return nil, errors.New("give --log name=PATH (one or more) and --total > 0")
	}
	res := &attemptLogResult{Mode: "attemptlog", Logs: logs.values, Outcomes: map[string]int{},
		Statuses: map[string]int{}, TotalMS: float64(total.Milliseconds())}
	type span struct{ start, end time.Time }
	spans := map[string]*span{}
	var queued, waited []time.Duration
	for _, path := range logs.values {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		for sc.Scan() {
			var l attemptLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s line %d: %v", path, res.Lines+1, err)
			}
			res.Lines++
			res.Outcomes[l.Outcome]++
			if l.Outcome == "rate_limited" {
				res.RateLimited += max(l.Refused, 1)
				continue
			}
			if l.Refused > 0 { // a line standing for refusals (breaker open, budget)
				continue
			}
			res.Attempts++
			res.Statuses[strconv.Itoa(l.Status)]++
			q := time.Duration(l.QueuedMS * 1e6)
			queued = append(queued, q)
			if q >= time.Millisecond { // a slot free at once still takes a few µs
				waited = append(waited, q)
			}
			s, e := l.TS.Add(-q), l.TS.Add(time.Duration(l.LatencyMS*1e6))
			if sp := spans[l.RequestID]; sp == nil {
				spans[l.RequestID] = &span{s, e}
			} else {
				sp.start, sp.end = minTime(sp.start, s), maxTime(sp.end, e)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
	}
	res.Waited = len(waited)
	res.QueuedMS, res.QueuedWaitedMS = msDistOf(queued), msDistOf(waited)
	res.Calls = len(spans)
	for _, sp := range spans {
		d := sp.end.Sub(sp.start)
		res.LongestCallMS = max(res.LongestCallMS, round1(float64(d)/1e6))
		if d > *total {
			res.OverTotal++
		}
	}
	return res, nil
}

// msDist summarises durations, in milliseconds.
type msDist struct {
	N    int     `json:"n"`
	P50  float64 `json:"p50_ms"`
	P90  float64 `json:"p90_ms"`
	P99  float64 `json:"p99_ms"`
	Max  float64 `json:"max_ms"`
	Mean float64 `json:"mean_ms"`
}

func msDistOf(ds []time.Duration) msDist {
	d := summarize(ds)
	return msDist{N: d.N, P50: round1(d.P50 / 1e3), P90: round1(d.P90 / 1e3), P99: round1(d.P99 / 1e3),
		Max: round1(d.Max / 1e3), Mean: round1(d.Mean / 1e3)}
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// fakeCounts reads the fake's GET /fake/calls.
func fakeCounts(base string) (rlFake, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	resp, err := hc.Get(base + "/fake/calls")
	if err != nil {
		return rlFake{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return rlFake{}, err
	}
	var v struct {
		Calls       *int `json:"calls"`
		RateLimited int  `json:"rate_limited"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Calls == nil {
		return rlFake{}, fmt.Errorf("GET %s/fake/calls answered %q", base, b)
	}
	return rlFake{Calls: *v.Calls, RateLimited: v.RateLimited, Admitted: *v.Calls - v.RateLimited}, nil
}
