package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	"github.com/sluice-llm/sluice/internal/config"
)

// openStore opens the breaker state store the config names. The returned
// closer releases it.
func openStore(cfg *config.Config, logger *slog.Logger) (breaker.Store, io.Closer, error) {
	switch cfg.State.Backend {
	case config.BackendMemory:
		return breaker.NewMemory(), nopCloser{nil}, nil
	case config.BackendRedis:
		redis.SetLogger(redisLog{logger})
		st, err := redisstore.New(redisstore.Options{URL: cfg.State.URL, Logger: logger})
		if err != nil {
			return nil, nil, fmt.Errorf("state.url: %v", err)
		}
		return st, st, nil
	}
	dir, err := cfg.StateDir()
	if err != nil {
		return nil, nil, err
	}
	st, err := breaker.OpenFile(dir, breaker.FileOptions{Logger: logger})
	if err != nil {
		return nil, nil, fmt.Errorf("state.dir: %v", err)
	}
	return st, st, nil
}

// redisLog sends go-redis's own messages (dial failures during an outage,
// which the store already reports once) to the debug level.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
