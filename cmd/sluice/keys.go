package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice/internal/cmdline"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/gateway"
)

// runKeys runs sluice keys: the pool keys of the config's providers, by
// short hash, with the state the shared store holds for them; or the reset
// of one.
func runKeys(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice keys", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "config file whose pools and state store to read (default $"+config.EnvConfig+", else the built-in defaults)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sluice keys [--config F] [--json]\n       sluice keys reset HASH [--config F]\n\n"+
			"Lists the keys of the providers' pools (api_keys_env) by short hash — never the key — with their\n"+
			"state in the configured state store: ready, paused (a rate limit) until a time, or out (of quota)\n"+
			"until a time or a reset. reset HASH makes a key ready again for every gateway sharing the state.\n"+
			"The key variables must be set, as for sluice serve.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	pos, err := cmdline.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		return exitUsage
	}
	reset, err := keyToReset(pos)
	if err != nil {
		fmt.Fprintf(stderr, "sluice keys: %v\n", err)
		return exitUsage
	}
	cfg, err := config.Load(config.Locate(*cfgPath))
	if err != nil {
		fmt.Fprintf(stderr, "sluice keys: %v\n", err)
		return exitUsage
	}
	if cfg.State.Backend == config.BackendMemory {
		fmt.Fprintln(stderr, "sluice keys: state.backend is memory: key states live inside the serving process (GET /sluice/keys there)")
		return exitUsage
	}
	stores, err := openStore(cfg, slog.New(slog.NewTextHandler(stderr, nil)))
	if err != nil {
		fmt.Fprintf(stderr, "sluice keys: %v\n", err)
		return exitUsage
	}
	defer stores.Close()
	pools, err := gateway.NewKeyPools(cfg, os.Getenv, stores.limits)
	if err != nil {
		fmt.Fprintf(stderr, "sluice keys: %v\n", err)
		return exitUsage
	}
	if reset != "" {
		var unknown *gateway.UnknownKeyError
		if _, err := gateway.ResetKey(pools, reset); errors.As(err, &unknown) {
			fmt.Fprintf(stderr, "sluice keys: no pool key has the hash %q (sluice keys lists them)\n", reset)
			return exitUsage
		} else if err != nil {
			fmt.Fprintf(stderr, "sluice keys: reset %s: %v\n", reset, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %s\n", reset, gateway.KeyReady)
		return exitOK
	}
	views := gateway.KeyViews(pools, time.Now())
	if *asJSON {
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
		if v.State == gateway.KeyOut && v.Until.IsZero() {
			until = "reset"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", v.Provider, v.Hash, v.Env, v.Weight, v.State, until)
	}
	tw.Flush()
	return exitOK
}

// keyToReset reads the positional arguments of `sluice keys`: none to list
// the keys, or "reset HASH". It returns the hash to reset, "" to list.
func keyToReset(pos []string) (string, error) {
	const want = "no argument to list the keys, or reset HASH"
	switch {
	case len(pos) == 0:
		return "", nil
	case pos[0] != "reset":
		return "", cmdline.Unexpected(pos, want)
	case len(pos) == 1 || pos[1] == "":
		return "", fmt.Errorf("reset: name the key by its hash (sluice keys lists them)")
	case len(pos) > 2:
		return "", cmdline.Unexpected(pos[2:], want)
	}
	return pos[1], nil
}
