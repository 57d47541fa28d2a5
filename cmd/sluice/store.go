package main

import (
	"log/slog"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/config"
)

// openStore opens the breaker state store the config names.
func openStore(cfg *config.Config, logger *slog.Logger) (breaker.Store, error) {
	switch cfg.State.Backend {
	case config.BackendMemory:
		return breaker.NewMemory(), nil
	default:
		logger.Warn("state backend " + cfg.State.Backend + " is not built yet; breakers are shared within this process only")
		return breaker.NewMemory(), nil
	}
}
