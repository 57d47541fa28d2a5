package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/filestore"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	"github.com/sluice-llm/sluice/idempotency"
	idemredis "github.com/sluice-llm/sluice/idempotency/redisstore"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/redisconn"
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
	answers  idempotency.Store // kept per Idempotency-Key
	closers  []io.Closer       // released in order by Close
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
		return &stores{breakers: breaker.NewMemory(), ledger: spend.NewLedger(state.NewMemory()), limits: limit.NewMemory(),
			answers: &idempotency.Memory{MaxAnswer: cfg.Idempotency.MaxAnswer, MaxBytes: cfg.Idempotency.MaxBytes}}, nil
	case config.BackendRedis:
		return openRedis(cfg, logger)
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
	answers, err := idempotency.OpenFile(filepath.Join(dir, "answers"),
		idempotency.FileOptions{MaxAnswer: cfg.Idempotency.MaxAnswer, MaxBytes: cfg.Idempotency.MaxBytes})
	if err != nil {
		limits.Close()
		st.Close()
		return nil, fmt.Errorf("state.dir: %v", err)
	}
	sweeper := sweepEvery(time.Minute, func(now time.Time) {
		if _, err := answers.Sweep(now); err != nil {
			logger.Warn("sweeping the kept answers failed", "dir", filepath.Join(dir, "answers"), "err", err)
		}
	})
	return &stores{breakers: st, ledger: ledger, limits: limits, answers: answers,
		closers: []io.Closer{sweeper, answers, limits, st}}, nil
}

// openRedis opens the stores on the Redis the config names, over one
// client: it first asks Redis whether it can serve them (a bounded wait)
// and refuses with one line when it cannot.
func openRedis(cfg *config.Config, logger *slog.Logger) (*stores, error) {
	redis.SetLogger(redisLog{logger})
	rc, err := cfg.RedisConn()
	if err != nil {
		return nil, err
	}
	where := "state.url"
	if rc.Mode == redisconn.Sentinel || rc.Mode == redisconn.Cluster {
		where = "state.redis"
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeWait)
	warnings, err := redisconn.Probe(ctx, rc)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	for _, w := range warnings {
		logger.Warn(where+": "+w, "state", rc.Where())
	}
	client, err := redisconn.New(rc)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", where, strings.TrimPrefix(err.Error(), "redis: "))
	}
	st, err := redisstore.New(redisstore.Options{Client: client, Logger: logger})
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	limits, err := redislimit.New(client, redislimit.Options{})
	if err != nil {
		st.Close()
		client.Close()
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	answers := idemredis.New(client, idemredis.Options{MaxAnswer: cfg.Idempotency.MaxAnswer})
	if rc.Mode != redisconn.Cluster {
		ctx, cancel := context.WithTimeout(context.Background(), probeWait)
		n, err := redisledger.Migrate(ctx, client, "")
		cancel()
		if n > 0 || err != nil {
			logger.Info("budget keys of an older release renamed to their hash-tagged names", "renamed", n, "err", err)
		}
	}
	lo := redisledger.Options{Logger: logger}
	if rc.Mode == redisconn.Sentinel {
		// A hold or a settlement a failover would lose is not trusted; the
		// replica's confirmation (WAIT) needs more than the default 100ms
		// on a busy host.
		lo.Replicas, lo.Timeout = 1, ledgerWaitTimeout
	}
	return &stores{breakers: st, ledger: redisledger.New(client, lo), limits: limits,
		answers: answers, closers: []io.Closer{st, client}}, nil
}

// ledgerWaitTimeout bounds each ledger call, the replica's confirmation
// included, under Sentinel.
const ledgerWaitTimeout = 500 * time.Millisecond

// probeWait bounds the question asked of Redis at start.
const probeWait = 5 * time.Second

// redisLog sends go-redis's own messages (dial failures during an outage,
// which the store already reports once) to the debug level.
type redisLog struct{ logger *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis: "+fmt.Sprintf(format, v...))
}

// sweeper runs a sweep periodically until closed.
type sweeper struct {
	stop chan struct{}
	done chan struct{}
}

// sweepEvery runs sweep every d (the first after d) until Close.
func sweepEvery(d time.Duration, sweep func(now time.Time)) *sweeper {
	s := &sweeper{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				sweep(now)
			case <-s.stop:
				return
			}
		}
	}()
	return s
}

// Close stops the sweeps, waiting for one under way.
func (s *sweeper) Close() error {
	close(s.stop)
	<-s.done
	return nil
}
