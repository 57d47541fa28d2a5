package check

import (
	"io"
	"log/slog"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/gateway"
)

// serveRefuses runs the checks `sluice serve` runs on c after loading it,
// the environment included (api_key_env and admin.token_env set, fallback
// key rules), by building the gateway as serve does on a memory store and
// closing it. It returns serve's own error, so that check and serve refuse
// the same configs with the same message.
func serveRefuses(c *config.Config) error {
	g, err := gateway.New(c, gateway.Options{Store: breaker.NewMemory(), AttemptLog: io.Discard,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	return g.Close()
}
