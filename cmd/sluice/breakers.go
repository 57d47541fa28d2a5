package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/config"
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
	opens := openedAfter(run.cfg)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "BREAKER\tSTATE\tFAILURES\tREASON\tUNTIL\tCHANGED")
	for _, v := range views {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", v.Name, v.State, failuresCell(v), reasonCell(v, opens[v.Name]),
			stamp(v.Until), stamp(v.Changed))
	}
	tw.Flush()
	return exitOK
}

// failuresCell is the FAILURES column: the consecutive failures a closed
// breaker has counted. An open or half-open breaker counts none (its
// record starts the count again when it closes): "-", and REASON and
// UNTIL say why it opened and when it may probe.
func failuresCell(v gateway.BreakerView) string {
	if v.State != breaker.Closed.String() {
		return "-"
	}
	return strconv.Itoa(v.Failures)
}

// reasonCell is the REASON column: why the breaker last opened, with, for
// consecutive failures, how many opened it when the config says (n > 0).
func reasonCell(v gateway.BreakerView, n int) string {
	if v.Reason == "failures" && n > 0 {
		return fmt.Sprintf("failures (%d in a row)", n)
	}
	return dash(v.Reason)
}

// openedAfter returns, per breaker name of cfg, how many consecutive
// failures open it, as its policies' breaker settings say; a name whose
// policies disagree is left out.
func openedAfter(cfg *config.Config) map[string]int {
	out := map[string]int{}
	mixed := map[string]bool{}
	for name, pol := range cfg.Policies {
		one := *cfg
		one.Policies = map[string]sluice.Policy{name: pol}
		n := failuresToOpen(pol.Breaker)
		for _, b := range gateway.BreakerNames(&one) {
			if m, ok := out[b]; ok && m != n {
				mixed[b] = true
			}
			out[b] = n
		}
	}
	for b := range mixed {
		delete(out, b)
	}
	return out
}

// failuresToOpen is how many consecutive failures open a closed breaker
// of settings s, found by its own transition function; 0 when none up to
// a thousand does.
func failuresToOpen(s breaker.Settings) int {
	var r breaker.Record
	now := time.Unix(0, 0)
	for n := 1; n <= 1000; n++ {
		if r = s.Next(r, breaker.Event{Kind: breaker.EventFailure}, now); r.State == breaker.Open {
			return n
		}
	}
	return 0
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
