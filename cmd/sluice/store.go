package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/filestore"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
	"github.com/sluice-llm/sluice/spend/redisledger"
	"github.com/sluice-llm/sluice/state"
)

// openStore opens the state the config names: the breakers' store and the
// spend ledger, kept in the same place (memory, the state directory, or
// Redis over one pool of connections). The returned closer releases both.
func openStore(cfg *config.Config, logger *slog.Logger) (breaker.Store, spend.Ledger, io.Closer, error) {
	switch cfg.State.Backend {
	case config.BackendMemory:
		return breaker.NewMemory(), spend.NewLedger(state.NewMemory()), nopCloser{nil}, nil
	case config.BackendRedis:
		redis.SetLogger(redisLog{logger})
		st, err := redisstore.New(redisstore.Options{URL: cfg.State.URL, Logger: logger})
		if err != nil {
			return nil, nil, nil, fmt.Errorf("state.url: %v", err)
		}
		return st, redisledger.New(st.Client(), redisledger.Options{}), st, nil
	}
	dir, err := cfg.StateDir()
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := filestore.Open(dir, filestore.Options{Logger: logger})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("state.dir: %v", err)
	}
	ledger, err := spend.NewFileLedger(st.Records())
	if err != nil {
		st.Close()
		return nil, nil, nil, fmt.Errorf("state.dir: %v", err)
	}
	return st, ledger, st, nil
}

// redisLog sends go-redis's own messages (dial failures during an outage,
// which the store already reports once) to the debug level.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
