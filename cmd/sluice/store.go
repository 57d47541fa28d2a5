package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/filestore"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/limit/redislimit"
	"github.com/sluice-llm/sluice/spend"
	"github.com/sluice-llm/sluice/spend/redisledger"
	"github.com/sluice-llm/sluice/state"
)

// stores is the state the config names, kept in one place: memory, the
// state directory, or Redis over one pool of connections.
type stores struct {
	breakers breaker.Store
	ledger   spend.Ledger
	limits   limit.Store
	closers  []io.Closer // released in order by Close
}

// Close releases the stores.
func (s *stores) Close() error {
	var errs []error
	for _, c := range s.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// openStore opens the state the config names: the breakers' store, the
// spend ledger and the rate limits' buckets, kept in the same place.
func openStore(cfg *config.Config, logger *slog.Logger) (*stores, error) {
	switch cfg.State.Backend {
	case config.BackendMemory:
		return &stores{breakers: breaker.NewMemory(), ledger: spend.NewLedger(state.NewMemory()), limits: limit.NewMemory()}, nil
	case config.BackendRedis:
		redis.SetLogger(redisLog{logger})
		st, err := redisstore.New(redisstore.Options{URL: cfg.State.URL, Logger: logger})
		if err != nil {
			return nil, fmt.Errorf("state.url: %v", err)
		}
		limits, err := redislimit.New(st.Client(), redislimit.Options{})
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("state.url: %v", err)
		}
		return &stores{breakers: st, ledger: redisledger.New(st.Client(), redisledger.Options{}), limits: limits,
			closers: []io.Closer{st}}, nil
	}
	dir, err := cfg.StateDir()
	if err != nil {
		return nil, err
	}
	st, err := filestore.Open(dir, filestore.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("state.dir: %v", err)
	}
	ledger, err := spend.NewFileLedger(st.Records())
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("state.dir: %v", err)
	}
	limits, err := limit.NewFile(st.Records())
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("state.dir: %v", err)
	}
	return &stores{breakers: st, ledger: ledger, limits: limits, closers: []io.Closer{limits, st}}, nil
}

// redisLog sends go-redis's own messages (dial failures during an outage,
// which the store already reports once) to the debug level.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}
