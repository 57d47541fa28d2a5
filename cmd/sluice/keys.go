package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice/internal/keypool"
)

// keysCommand is sluice keys.
var keysCommand = stateCommand{
	name: "keys", item: "HASH",
	about: "Lists the keys of the providers' pools (api_keys_env) by short hash — never the key — with their\n" +
		"state in the configured state store: ready, paused (a rate limit) until a time, or out (of quota)\n" +
		"until a time or a reset. reset HASH makes a key ready again for every gateway sharing the state.\n" +
		"The key variables must be set, as for sluice serve.",
	configHelp: "config file whose pools and state store to read",
	noItem:     "name the key by its hash (sluice keys lists them)",
	inProcess:  "key states live inside the serving process (GET /sluice/keys there)",
}

// runKeys runs sluice keys: the pool keys of the config's providers, by
// short hash, with the state the shared store holds for them; or the reset
// of one.
func runKeys(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	run, code, ok := keysCommand.start(args, stderr)
	if !ok {
		return code
	}
	defer run.stores.Close()
	reset := run.reset
	pools, err := keypool.New(run.cfg.Providers, os.Getenv, run.stores.limits, keypool.Events{})
	if err != nil {
		fmt.Fprintf(stderr, "sluice keys: %v\n", err)
		return exitUsage
	}
	if reset != "" {
		var unknown *keypool.UnknownKeyError
		if _, err := pools.Reset(reset); errors.As(err, &unknown) {
			fmt.Fprintf(stderr, "sluice keys: no pool key has the hash %q (sluice keys lists them)\n", reset)
			return exitUsage
		} else if err != nil {
			fmt.Fprintf(stderr, "sluice keys: reset %s: %v\n", reset, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %s\n", reset, keypool.Ready)
		return exitOK
	}
	views := pools.Views(time.Now())
	if run.asJSON {
		json.NewEncoder(stdout).Encode(map[string]any{"keys": views})
		return exitOK
	}
	if len(views) == 0 {
		fmt.Fprintln(stdout, "no pools: a provider lists its keys in api_keys_env")
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROVIDER\tKEY\tENV\tWEIGHT\tSTATE\tUNTIL")
	for _, v := range views {
		until := stamp(v.Until)
		if v.State == keypool.Out && v.Until.IsZero() {
			until = "reset"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", v.Provider, v.Hash, v.Env, v.Weight, v.State, until)
	}
	tw.Flush()
	return exitOK
}
