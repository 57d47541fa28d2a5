package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice/fake"
)

func runFake(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice fake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:9090", "address to listen on")
	script := fs.String("script", "200", "default script, e.g. 503,503,200 (a request's Sluice-Fake-Script header wins)")
	events := fs.Int("events", 5, "text events in a streamed answer")
	interval := fs.Duration("interval", 0, "pause between stream events")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sluice fake [--listen ADDR] [--script STEPS]\n\n"+
			"Runs a fake OpenAI (/v1/chat/completions) and Anthropic (/v1/messages) API that follows a script,\n"+
			"for drills against real agents. GET /fake/calls counts the calls and the steps they played.\n\n"+
			"Steps: 200, 503, 429:retry-after=2, hang, reset, slow:DUR, overloaded, stream:stall-after=N,\n"+
			"stall (200, part of the answer, then silence), cut (the same, then the connection closes), and\n"+
			"random faults with a seed, the rest 200: mix:503=10%%;reset=5%%;hang=1%%;stall=2%%;seed=7\n"+
			"(see go doc github.com/sluice-llm/sluice/fake).\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nScript steps (comma-separated; each call plays the next step, the last repeats;\n"+
			"a request's Sluice-Fake-Script header overrides --script; modifiers join with \";\"):\n")
		tw := tabwriter.NewWriter(stderr, 0, 0, 2, ' ', 0)
		for _, s := range fakeSteps {
			fmt.Fprintf(tw, "  %s\t%s\te.g. %s\n", s.step, s.does, s.example)
		}
		tw.Flush()
	}
	if code, ok := parseFlagsOnly(fs, args, stderr, "flags only; a script goes in --script"); !ok {
		return code
	}
	if _, err := fake.ParseScript(*script); err != nil {
		fmt.Fprintf(stderr, "sluice fake: --script: %v\n", err)
		return exitUsage
	}
	p := &fake.Provider{Script: *script, Events: *events, Interval: *interval, MaxRequests: 1000}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "sluice fake: %v (choose another --listen address)\n", err)
		return exitUsage
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		p.Close()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	fmt.Fprintf(stdout, "sluice fake: listening on http://%s with script %q\n", ln.Addr(), *script)
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "sluice fake: %v\n", err)
		return 1
	}
	return exitOK
}
