// Command nolog serves the gateway with the attempt log switched off, to
// measure what the log costs: `sluice serve` has no switch for that (an
// empty log.attempts means the default file, and /dev/null still costs a
// write per attempt). It builds the same gateway from the same config as
// `sluice serve`, with the file breaker store, and gives it no log writer.
//
// Usage:
//
//	nolog --config sluice.yaml
package main

import (
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/filestore"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/gateway"
	"github.com/sluice-llm/sluice/spend"
	"github.com/sluice-llm/sluice/state"
)

func main() {
	path := flag.String("config", "", "the gateway's config file")
	flag.Parse()
	if err := run(*path); err != nil {
		fmt.Fprintf(os.Stderr, "nolog: %v\n", err)
		os.Exit(1)
	}
}

func run(path string) error {
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))
	store, ledger, err := openStore(cfg, logger)
	if err != nil {
		return err
	}
	gw, err := gateway.New(cfg, gateway.Options{Store: store, Ledger: ledger, Logger: logger}) // no AttemptLog: off
	if err != nil {
		return err
	}
	srv := &http.Server{
		Addr:              cfg.Listen,
		Handler:           gw,
		ReadHeaderTimeout: cfg.Limits.ReadHeaderTimeout,
		IdleTimeout:       2 * time.Minute,
	}
	logger.Info("nolog serving: the attempt log is off", "addr", cfg.Listen, "state", cfg.State.Backend)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// openStore opens the breaker store, and the ledger beside it, as `sluice
// serve` does for the memory and file backends.
func openStore(cfg *config.Config, logger *slog.Logger) (breaker.Store, spend.Ledger, error) {
	if cfg.State.Backend == config.BackendMemory {
		return breaker.NewMemory(), spend.NewLedger(state.NewMemory()), nil
	}
	if cfg.State.Backend != config.BackendFile {
		return nil, nil, fmt.Errorf("state.backend %s: nolog serves memory or file only", cfg.State.Backend)
	}
	dir, err := cfg.StateDir()
	if err != nil {
		return nil, nil, err
	}
	st, err := filestore.Open(dir, filestore.Options{Logger: logger})
	if err != nil {
		return nil, nil, err
	}
	ledger, err := spend.NewFileLedger(st.Records())
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, ledger, nil
}
