// Command load is the load generator of the benchmark harness: it drives
// the fake upstream directly and through proxies (the floor, nginx, the
// gateway) and writes one JSON result per run. Standard library only.
//
// Usage:
//
//	load MODE [flags]
//
// Modes: latency, closed, open, sse, ttfb, hung, timeout, breaker, summary,
// ratelimit, attemptlog, rlreport.
// Run `load MODE -h` for a mode's flags. Every loop is bounded in count
// and in time; everything is meant for 127.0.0.1.
package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// modes maps a mode name to its entry point. Each returns the result to
// write as JSON, or an error.
var modes = map[string]func(args []string) (any, error){
	"latency":    runLatency,
	"closed":     runClosed,
	"open":       runOpen,
	"sse":        runSSE,
	"hung":       runHung,
	"timeout":    runTimeout,
	"breaker":    runBreaker,
	"summary":    runSummary,
	"ttfb":       runTTFB,
	"ratelimit":  runRatelimit,
	"attemptlog": runAttemptLog,
	"rlreport":   runRLReport,
}

func main() {
	if len(os.Args) < 2 || modes[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: load latency|closed|open|sse|ttfb|hung|timeout|breaker|summary|ratelimit|attemptlog|rlreport [flags] (see load MODE -h)")
		os.Exit(2)
	}
	res, err := modes[os.Args[1]](os.Args[2:])
	if err != nil {
		fmt.Fprintf(os.Stderr, "load %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	if res == nil {
		return
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(res); err != nil {
		fmt.Fprintf(os.Stderr, "load %s: writing the result: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
