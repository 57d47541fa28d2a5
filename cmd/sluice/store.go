package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/filestore"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	"github.com/sluice-llm/sluice/internal/config"
)

// openStore opens the breaker state store the config names, and the
// records a spend ledger keeps beside it: the file store's directory, nil
// for the other backends. The returned closer releases both.
func openStore(cfg *config.Config, logger *slog.Logger) (breaker.Store, sluice.Transformer, io.Closer, error) {
	switch cfg.State.Backend {
	case config.BackendMemory:
		return breaker.NewMemory(), nil, nopCloser{nil}, nil
	case config.BackendRedis:
		redis.SetLogger(redisLog{logger})
		st, err := redisstore.New(redisstore.Options{URL: cfg.State.URL, Logger: logger})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("state.url: %v", err)
		}
		return st, nil, st, nil
	}
	dir, err := cfg.StateDir()
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := filestore.Open(dir, filestore.Options{Logger: logger})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("state.dir: %v", err)
	}
	return st, st.Records(), st, nil
}

// redisLog sends go-redis's own messages (dial failures during an outage,
// which the store already reports once) to the debug level.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
