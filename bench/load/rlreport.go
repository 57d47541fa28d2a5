package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// rlScenario is one scenario's results: the clients' and the attempt logs'.
type rlScenario struct {
	name    string
	clients *rlResult
	log     *attemptLogResult
}

func runRLReport(args []string) (any, error) {
	fs := flag.NewFlagSet("rlreport", flag.ContinueOnError)
	dir := fs.String("dir", "", "directory of the rate-limit run, a subdirectory per scenario (NAME/clients.json, NAME/attempts.json)")
	scenario := fs.String("scenario", "", "print this scenario's summary; without it, the table of every scenario")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *dir == "" {
		return nil, errors.New("give --dir")
	}
	files, err := filepath.Glob(filepath.Join(*dir, "*", "clients.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	var all []rlScenario
	for _, f := range files {
		name := filepath.Base(filepath.Dir(f))
		if *scenario != "" && name != *scenario {
			continue
		}
		s := rlScenario{name: name, clients: &rlResult{}, log: &attemptLogResult{}}
		if err := readJSON(f, s.clients); err != nil {
			return nil, err
		}
		if err := readJSON(filepath.Join(*dir, name, "attempts.json"), s.log); err != nil {
			return nil, err
		}
		all = append(all, s)
	}
	if len(all) == 0 {
		return nil, fmt.Errorf("no */clients.json in %s (scenario %q)", *dir, *scenario)
	}
	if *scenario != "" {
		printRLScenario(os.Stdout, all[0])
		return nil, nil
	}
	printRLTable(os.Stdout, all)
	return nil, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	return nil
}

// printRLScenario writes one scenario's figures as text.
func printRLScenario(w io.Writer, s rlScenario) {
	c, l := s.clients, s.log
	fmt.Fprintf(w, "scenario %s: %d clients over %d gateway(s) for %.0f s, client timeout %.0f s, body %d bytes, max_tokens %d\n",
		s.name, c.Clients, len(c.URLs), c.Seconds, c.ClientTimeoutS, c.BodyBytes, c.MaxTokens)
	k := c.Counts
	fmt.Fprintf(w, "clients: %d calls ended: %d ok (%.1f per minute), 429 gateway rate_limited %d, 429 relayed from upstream %d,\n",
		k.Calls, k.OK, c.OKPerMinute, k.GatewayRateLimited, k.Upstream429)
	fmt.Fprintf(w, "         503 provider_down %d, other 503 %d, other statuses %v, transport errors %d; cut at the end %d (oldest %.1f s)\n",
		k.ProviderDown, k.Other503, k.OtherStatus, k.Errors, c.CutAtEnd, c.CutMaxAgeMS/1e3)
	fmt.Fprintf(w, "latency of the 200s: p50 %.1f ms, p99 %.1f ms, max %.1f ms (answered, any status: p50 %.1f ms, max %.1f ms)\n",
		c.LatencyOK.P50/1e3, c.LatencyOK.P99/1e3, c.LatencyOK.Max/1e3, c.LatencyAll.P50/1e3, c.LatencyAll.Max/1e3)
	fmt.Fprintf(w, "fake upstream: %d calls, %d answered 429 by its limits, %d admitted\n", c.Fake.Calls, c.Fake.RateLimited, c.Fake.Admitted)
	fmt.Fprintf(w, "per %.0f s     ", c.BucketSeconds)
	for _, b := range c.Buckets {
		fmt.Fprintf(w, " %6.0fs", b.EndS)
	}
	row := func(label string, f func(rlBucket) int) {
		fmt.Fprintf(w, "\n  %-13s", label)
		for _, b := range c.Buckets {
			fmt.Fprintf(w, " %7d", f(b))
		}
	}
	row("upstream 429", func(b rlBucket) int { return b.FakeLimited })
	row("upstream ok", func(b rlBucket) int { return b.FakeAdmitted })
	row("client 200", func(b rlBucket) int { return b.OK })
	row("client gw429", func(b rlBucket) int { return b.Gateway429 })
	row("client up429", func(b rlBucket) int { return b.Upstream429 })
	row("client 503", func(b rlBucket) int { return b.Status503 })
	row("client other", func(b rlBucket) int { return b.Other })
	fmt.Fprintln(w)
	fmt.Fprintf(w, "attempt logs: %d lines, outcomes %v, upstream statuses %v\n", l.Lines, l.Outcomes, l.Statuses)
	fmt.Fprintf(w, "  queued_ms over %d attempts: p50 %.1f, p90 %.1f, p99 %.1f, max %.1f; %d waited (their p50 %.1f, max %.1f)\n",
		l.Attempts, l.QueuedMS.P50, l.QueuedMS.P90, l.QueuedMS.P99, l.QueuedMS.Max, l.Waited, l.QueuedWaitedMS.P50, l.QueuedWaitedMS.Max)
	fmt.Fprintf(w, "  calls refused rate_limited: %d; calls: %d, longest %.1f s, over the policy total (%.0f s): %d\n",
		l.RateLimited, l.Calls, l.LongestCallMS/1e3, l.TotalMS/1e3, l.OverTotal)
}

// printRLTable writes the figures of every scenario as a Markdown table.
func printRLTable(w io.Writer, all []rlScenario) {
	fmt.Fprintln(w, "| scenario | client 200 (per min) | gw 429 rate_limited | upstream 429 relayed | 503 provider_down | other | cut at end | p50 / p99 / max of 200s (s) | fake calls | fake 429 | fake 429 per bucket (10 s; e, f, t: 5 s) | queued_ms p50 / p99 / max | log rate_limited | calls over total |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, s := range all {
		c, l, k := s.clients, s.log, s.clients.Counts
		other := k.Other503 + k.Errors
		for _, n := range k.OtherStatus {
			other += n
		}
		var per []string
		for _, b := range c.Buckets {
			per = append(per, fmt.Sprint(b.FakeLimited))
		}
		fmt.Fprintf(w, "| %s | %d (%.1f) | %d | %d | %d | %d | %d | %.2f / %.2f / %.2f | %d | %d | %s | %.0f / %.0f / %.0f | %d | %d |\n",
			s.name, k.OK, c.OKPerMinute, k.GatewayRateLimited, k.Upstream429, k.ProviderDown, other, c.CutAtEnd,
			c.LatencyOK.P50/1e6, c.LatencyOK.P99/1e6, c.LatencyOK.Max/1e6, c.Fake.Calls, c.Fake.RateLimited,
			strings.Join(per, " "), l.QueuedMS.P50, l.QueuedMS.P99, l.QueuedMS.Max, l.RateLimited, l.OverTotal)
	}
}
