package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/breaker/redisstore"
	"github.com/sluice-llm/sluice/internal/cmdline"
	"github.com/sluice-llm/sluice/internal/config"
)

// stateCommand is what sluice breakers and sluice keys share: each lists
// what the configured shared state holds of its kind (--json for JSON), or
// resets one of them ("reset X"), after loading the config and opening
// its state.
type stateCommand struct {
	name       string // the command: breakers, keys
	item       string // what reset names, in the usage: NAME, HASH
	about      string // the usage's text, between the usage lines and the flags
	configHelp string // the --config flag's help
	noItem     string // the error of a reset that names nothing
	inProcess  string // where a memory state keeps them, for the error that says so
}

// stateRun is a stateCommand started: the config, its open state, the
// item to reset ("" to list) and whether to print JSON.
type stateRun struct {
	cfg    *config.Config
	stores *stores
	reset  string
	asJSON bool
}

// start parses args, loads the config and opens its state. When it cannot
// (or the flags asked for help), it has written why to stderr and returns
// the exit code, with ok false. The caller closes run.stores.
func (sc stateCommand) start(args []string, stderr io.Writer) (run stateRun, code int, ok bool) {
	fs := flag.NewFlagSet("sluice "+sc.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := cmdline.ConfigFlag(fs, sc.configHelp)
	stateFlag := fs.String("state", "", "the state store to read instead of the config's: a state directory, or a redis://, rediss:// or unix:// URL")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sluice %[1]s [--config F] [--state DIR|URL] [--json]\n       sluice %[1]s reset %[2]s [--config F] [--state DIR|URL]\n\n%[3]s\n\nFlags:\n",
			sc.name, sc.item, sc.about)
		fs.PrintDefaults()
	}
	pos, err := cmdline.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return run, exitOK, false
	}
	if err != nil {
		return run, exitUsage, false
	}
	if run.reset, err = sc.toReset(pos); err != nil {
		fmt.Fprintf(stderr, "sluice %s: %v\n", sc.name, err)
		return run, exitUsage, false
	}
	src := cmdline.LocateConfig(*cfgPath)
	if run.cfg, err = src.Load(); err != nil {
		fmt.Fprintf(stderr, "sluice %s: %v\n", sc.name, err)
		return run, exitUsage, false
	}
	var from fmt.Stringer = src
	if *stateFlag != "" {
		run.cfg.State = stateOf(*stateFlag)
		from = stateFrom{src}
	}
	if run.cfg.State.Backend == config.BackendMemory {
		fmt.Fprintf(stderr, "sluice %s: state.backend is memory (%s): %s\n", sc.name, src, sc.inProcess)
		return run, exitUsage, false
	}
	if run.stores, err = openStore(run.cfg, slog.New(slog.NewTextHandler(stderr, nil))); err != nil {
		fmt.Fprintf(stderr, "sluice %s: %v\n", sc.name, err)
		return run, exitUsage, false
	}
	if r, ok := run.stores.breakers.(*redisstore.Store); ok && r.Degraded() {
		// Its local breakers are not the shared ones: say so, and list nothing.
		err := r.Err()
		if err == nil { // back meanwhile: ask again
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err = r.Client().Ping(ctx).Err()
			cancel()
		}
		run.stores.Close()
		fmt.Fprintf(stderr, "sluice %s: the state's Redis, %s, failed (%v): start it or fix it, or name the state to read with --state\n",
			sc.name, stateWhere(run.cfg), err)
		return run, 1, false
	}
	cmdline.Reading(stderr, "sluice "+sc.name, "state "+stateWhere(run.cfg), from)
	run.asJSON = *asJSON
	return run, exitOK, true
}

// stateFrom says where the state read comes from when --state names it:
// the flag, and the config whose providers and routes say what to list.
type stateFrom struct{ src cmdline.Source }

func (f stateFrom) String() string {
	if f.src.Path == "" {
		return "--state, with the built-in providers and routes: no --config and no $" + config.EnvConfig
	}
	return "--state, with the providers and routes of " + f.src.String()
}

// toReset reads the positional arguments: none to list, or "reset X". It
// returns X, "" to list.
func (sc stateCommand) toReset(pos []string) (string, error) {
	want := "no argument to list the " + sc.name + ", or reset " + sc.item
	switch {
	case len(pos) == 0:
		return "", nil
	case pos[0] != "reset":
		return "", cmdline.Unexpected(pos, want)
	case len(pos) == 1 || pos[1] == "":
		return "", errors.New("reset: " + sc.noItem)
	case len(pos) > 2:
		return "", cmdline.Unexpected(pos[2:], want)
	}
	return pos[1], nil
}

// stateOf is the state store --state names: a Redis URL, else a state
// directory.
func stateOf(v string) config.State {
	for _, scheme := range []string{"redis://", "rediss://", "unix://"} {
		if strings.HasPrefix(v, scheme) {
			return config.State{Backend: config.BackendRedis, URL: v}
		}
	}
	return config.State{Backend: config.BackendFile, Dir: v}
}
