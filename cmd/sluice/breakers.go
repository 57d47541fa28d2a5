package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/cmdline"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/gateway"
)

func runBreakers(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice breakers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file whose state store to read (default $"+config.EnvConfig+", else the built-in defaults)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sluice breakers [--config F] [--json]\n       sluice breakers reset NAME [--config F]\n\n"+
			"Lists the breakers of the configured state store (file or redis) and their state, or closes one.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, err := cmdline.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	reset, err := resetName(pos)
	if err != nil {
		fmt.Fprintf(stderr, "sluice breakers: %v\n", err)
		return exitUsage
	}
	cfg, err := config.Load(config.Locate(*cfgPath))
	if err != nil {
		fmt.Fprintf(stderr, "sluice breakers: %v\n", err)
		return exitUsage
	}
	if cfg.State.Backend == config.BackendMemory {
		fmt.Fprintln(stderr, "sluice breakers: state.backend is memory: breakers live inside the serving process (GET /sluice/breakers there)")
		return exitUsage
	}
	stores, err := openStore(cfg, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		fmt.Fprintf(stderr, "sluice breakers: %v\n", err)
		return exitUsage
	}
	defer stores.Close()
	store := stores.breakers
	if reset != "" {
		list, err := store.List()
		if err != nil {
			fmt.Fprintf(stderr, "sluice breakers: %v\n", err)
			return 1
		}
		if _, ok := list[reset]; !ok {
			fmt.Fprintf(stderr, "sluice breakers: no breaker named %q (sluice breakers lists them)\n", reset)
			return exitUsage
		}
		if err := breaker.New(reset, breaker.Settings{}, store).Reset(); err != nil {
			fmt.Fprintf(stderr, "sluice breakers: reset %s: %v\n", reset, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: closed\n", reset)
		return exitOK
	}
	views, err := gateway.Views(store)
	if err != nil {
		fmt.Fprintf(stderr, "sluice breakers: %v\n", err)
		return 1
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(map[string]any{"breakers": views})
		return exitOK
	}
	if len(views) == 0 {
		fmt.Fprintln(stdout, "no breakers yet: they appear with the first call through a provider")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BREAKER\tSTATE\tFAILURES\tREASON\tUNTIL\tCHANGED")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", v.Name, v.State, v.Failures, dash(v.Reason), stamp(v.Until), stamp(v.Changed))
	}
	tw.Flush()
	return exitOK
}

// resetName reads the positional arguments of `sluice breakers`: none to
// list the breakers, or "reset NAME" to close one. It returns the name to
// reset, "" to list.
func resetName(pos []string) (string, error) {
	const want = "no argument to list the breakers, or reset NAME"
	switch {
	case len(pos) == 0:
		return "", nil
	case pos[0] != "reset":
		return "", cmdline.Unexpected(pos, want)
	case len(pos) == 1 || pos[1] == "":
		return "", fmt.Errorf("reset: name the breaker to close (sluice breakers lists them)")
	case len(pos) > 2:
		return "", cmdline.Unexpected(pos[2:], want)
	}
	return pos[1], nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}
