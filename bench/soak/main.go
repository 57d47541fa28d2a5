// Command soak runs a real `sluice serve` process against a fake provider
// that answers with random faults, at a fixed rate for a fixed time, and
// checks what the clients saw and what the attempt log says against what
// the fake did. Standard library only, loopback only.
//
// Usage:
//
//	soak [-duration 3m] [-rate 100] [-mix 'mix:503=10%;reset=5%;hang=1%;stall=2%;seed=1'] [-out FILE]
//
// Half the calls (-streams) are streams; calls alternate at random between
// OpenAI chat completions and Anthropic messages. The fake runs inside this
// process; the gateway is built from ./cmd/sluice (or -sluice BIN) and, when
// taskset exists, pinned to -gateway-cpu. Pin this process yourself, e.g.
// `taskset -c 1 soak …`, as bench/run.sh does for the load client.
//
// The fake keeps every request it receives, to pair each with its
// attempt-log line: about 1 KiB per upstream attempt in this process.
//
// It prints a summary and writes the raw result as JSON to -out. It exits
// 1 when a figure that must be 0 is not (calls past total + 1 s, replies
// with no HTTP status, streams cut without their end or an error event,
// attempt-log lines that do not match the upstream attempts), 2 on bad
// flags or when the run itself could not be made.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintf(stderr, "soak: %v\n", err)
		}
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := soak(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 2
	}
	if err := writeJSON(cfg.out, res); err != nil {
		fmt.Fprintf(stderr, "soak: writing %s: %v\n", cfg.out, err)
		return 2
	}
	printSummary(stdout, res)
	if len(res.Failures) > 0 {
		return 1
	}
	return 0
}

// config is what the flags say.
type config struct {
	duration, settle                time.Duration
	rate                            float64
	streams                         float64
	mix                             string
	seed                            uint64
	out                             string
	sluice, gatewayCPU              string
	connect, firstByte, idle, total time.Duration
	events, breakerFailures         int
	interval                        time.Duration
	maxInFlight                     int
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&c.duration, "duration", 3*time.Minute, "how long to send calls")
	fs.Float64Var(&c.rate, "rate", 100, "calls per second, sent at a fixed pace (open loop)")
	fs.Float64Var(&c.streams, "streams", 0.5, "share of calls that ask for a stream, 0 to 1")
	fs.StringVar(&c.mix, "mix", "mix:503=10%;reset=5%;hang=1%;stall=2%;seed=1", "the fake's script (see go doc ./fake)")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the client's choices (dialect, stream or not)")
	fs.StringVar(&c.out, "out", "soak.json", "file to write the raw result to (JSON)")
	fs.StringVar(&c.sluice, "sluice", "", "the sluice binary; if empty, built from ./cmd/sluice of this module")
	fs.StringVar(&c.gatewayCPU, "gateway-cpu", "0", "CPU list to pin the gateway to with taskset; empty: no pinning")
	fs.DurationVar(&c.connect, "connect", time.Second, "the gateway policy's connect timeout")
	fs.DurationVar(&c.firstByte, "first-byte", 2*time.Second, "the gateway policy's first_byte timeout")
	fs.DurationVar(&c.idle, "idle", 2*time.Second, "the gateway policy's idle timeout")
	fs.DurationVar(&c.total, "total", 6*time.Second, "the gateway policy's total timeout; a call past it + 1 s is late")
	fs.IntVar(&c.breakerFailures, "breaker-failures", 1000, "the gateway policy's breaker failures; 5 is the built-in")
	fs.IntVar(&c.events, "events", 16, "text events in the fake's streamed answers")
	fs.DurationVar(&c.interval, "interval", 5*time.Millisecond, "pause between the fake's stream events")
	fs.DurationVar(&c.settle, "settle", 3*time.Second, "wait after the last call before the end readings")
	fs.IntVar(&c.maxInFlight, "max-in-flight", 5000, "calls in flight at most; a call due beyond it is skipped and counted")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected argument %q; every setting is a flag (soak -h)", fs.Arg(0))
	case c.duration <= 0 || c.rate <= 0:
		return c, fmt.Errorf("-duration and -rate must be positive")
	case c.streams < 0 || c.streams > 1:
		return c, fmt.Errorf("-streams %v: want a share from 0 to 1", c.streams)
	case c.total < c.connect+c.firstByte:
		return c, fmt.Errorf("-total %v is shorter than -connect + -first-byte; the gateway would refuse it", c.total)
	case c.out == "":
		return c, fmt.Errorf("-out is empty; name a file for the raw result")
	case c.maxInFlight < 1 || c.breakerFailures < 1:
		return c, fmt.Errorf("-max-in-flight and -breaker-failures must be at least 1")
	}
	return c, nil
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
