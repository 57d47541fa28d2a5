package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/gateway"
)

// breakersCommand is sluice breakers.
var breakersCommand = stateCommand{
	name: "breakers", item: "NAME",
	about:      "Lists the breakers of the configured state store (file or redis) and their state, or closes one.",
	configHelp: "config file whose state store to read",
	noItem:     "name the breaker to close (sluice breakers lists them)",
	inProcess:  "breakers live inside the serving process (GET /sluice/breakers there)",
}

func runBreakers(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	run, code, ok := breakersCommand.start(args, stderr)
	if !ok {
		return code
	}
	defer run.stores.Close()
	reset, store := run.reset, run.stores.breakers
	known := gateway.BreakerNames(run.cfg)
	if reset != "" {
		list, err := store.List()
		if err != nil {
			fmt.Fprintf(stderr, "sluice breakers: %v\n", err)
			return 1
		}
		if _, ok := list[reset]; !ok && !slices.Contains(known, reset) {
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
	views, err := gateway.Views(store, known)
	if err != nil {
		fmt.Fprintf(stderr, "sluice breakers: %v\n", err)
		return 1
	}
	if run.asJSON {
		json.NewEncoder(stdout).Encode(map[string]any{"breakers": views})
		return exitOK
	}
	if len(views) == 0 {
		fmt.Fprintln(stdout, "no breakers: the config routes to no provider, and none has a record")
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
