// Command sluice keeps programs that call LLM APIs alive when the provider
// is slow, overloaded or down. Run `sluice help` for the commands.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/sluice-llm/sluice/internal/check"
	"github.com/sluice-llm/sluice/internal/cmdline"
	"github.com/sluice-llm/sluice/internal/report"
)

// Exit codes shared by every command.
const (
	exitOK       = 0 // done, nothing found
	exitFindings = 1 // done, and found something to fix
	exitUsage    = 2 // unusable input: bad flags, config or files
)

// command is one subcommand: it reads args (without its own name) and
// returns the exit code.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

var commands = map[string]command{
	"breakers": {"list the breakers of the state store and their state; reset one", runBreakers},
	"audit":    {"find OpenAI/Anthropic SDK clients that retry on their own or have no timeout", runAudit},
	"check":    {"validate a config; print worst-case call times; check systemd units and timers", check.Run},
	"report":   {"summarise attempt logs: outcomes, latency, retries, breaker openings, spend, 429s by minute and by pool key", report.Run},
	"fake":     {"run the scripted fake OpenAI/Anthropic/Gemini provider, for drills", runFake},
	"keys":     {"list the providers' pool keys by hash and their state (ready, paused, out); reset one", runKeys},
	"serve":    {"run the gateway that agents point their SDK base URL at", runServe},
	"version":  {"print the version", runVersion},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		return runHelp(args[1:], stdin, stdout, stderr)
	case "-version", "--version":
		name = "version"
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "sluice: unknown command %q (run 'sluice help' for the list)\n", name)
		return exitUsage
	}
	return c.run(args[1:], stdin, stdout, stderr)
}

// runHelp prints the usage, or with a command's name that command's help.
func runHelp(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		usage(stdout)
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(stderr, "sluice help: %v\n", cmdline.Unexpected(args[1:], "at most one command name"))
		return exitUsage
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "sluice help: unknown command %q (run 'sluice help' for the list)\n", args[0])
		return exitUsage
	}
	return c.run([]string{"--help"}, stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "sluice keeps LLM agents alive when the provider hangs, rate-limits or goes down.\n\n")
	fmt.Fprintf(w, "Usage: sluice <command> [flags]\n\nCommands:\n")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-9s %s\n", n, commands[n].summary)
	}
	fmt.Fprintf(w, "\nRun 'sluice <command> --help' for a command's flags. Exit codes: 0 ok, 1 findings, 2 unusable input.\n")
}

// parseFlagsOnly parses a subcommand's flags, wherever they stand, for a
// subcommand that takes no other argument. When it returns false, the
// caller exits with code: 0 after --help, 2 after a bad flag (the flag
// package said why) or a leftover argument (said here, with want).
func parseFlagsOnly(fs *flag.FlagSet, args []string, stderr io.Writer, want string) (code int, ok bool) {
	pos, err := cmdline.Parse(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	case err != nil:
		return exitUsage, false
	case len(pos) > 0:
		fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), cmdline.Unexpected(pos, want))
		return exitUsage, false
	}
	return 0, true
}
