package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// results are the JSON files of one run, by file name without .json.
type results struct {
	latency map[string]*latencyResult
	closed  map[string]*closedResult
	open    map[string]*openResult
	sse     map[string]*sseResult
	hung    map[string]*hungResult
	timeout map[string]*timeoutResult
	breaker map[string]*breakerResult
}

func runSummary(args []string) (any, error) {
	fs := flag.NewFlagSet("summary", flag.ContinueOnError)
	dir := fs.String("dir", "bench/results", "directory of the run's JSON results")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	rs, err := loadResults(*dir)
	if err != nil {
		return nil, err
	}
	w := os.Stdout
	printLatency(w, rs)
	printClosed(w, rs)
	printClosedAgg(w, rs)
	printLogcost(w, rs)
	printBudgetcost(w, rs)
	printOpen(w, rs)
	printSSE(w, rs)
	printHung(w, rs)
	printTimeouts(w, rs)
	printBreaker(w, rs)
	printBar(w, rs)
	return nil, nil
}

func loadResults(dir string) (*results, error) {
	rs := &results{latency: map[string]*latencyResult{}, closed: map[string]*closedResult{},
		open: map[string]*openResult{}, sse: map[string]*sseResult{}, hung: map[string]*hungResult{},
		timeout: map[string]*timeoutResult{}, breaker: map[string]*breakerResult{}}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var head struct {
			Mode string `json:"mode"`
		}
		if json.Unmarshal(b, &head) != nil {
			continue
		}
		key := strings.TrimSuffix(filepath.Base(f), ".json")
		var dst any
		switch head.Mode {
		case "latency":
			dst = into(rs.latency, key)
		case "closed":
			dst = into(rs.closed, key)
		case "open":
			dst = into(rs.open, key)
		case "sse":
			dst = into(rs.sse, key)
		case "hung":
			dst = into(rs.hung, key)
		case "timeout":
			dst = into(rs.timeout, key)
		case "breaker":
			dst = into(rs.breaker, key)
		default:
			continue
		}
		if err := json.Unmarshal(b, dst); err != nil {
			return nil, fmt.Errorf("%s: %v", f, err)
		}
	}
	return rs, nil
}

// into makes a new value in m under key and returns it.
func into[T any](m map[string]*T, key string) *T {
	v := new(T)
	m[key] = v
	return v
}

func sortedKeys[T any](m map[string]T) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// ratio formats a/b as "1.23×", or "–" when b is not positive.
func ratio(a, b float64) string {
	if b <= 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}
