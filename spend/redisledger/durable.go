package redisledger

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/spend"
)

// ErrNotReplicated is returned when fewer replicas than Options.Replicas
// confirmed a write in time: a failover could lose it.
var ErrNotReplicated = errors.New("redisledger: the write reached no replica in time")

// maxKept bounds the settlements kept to be sent again.
const maxKept = 100_000

// settlement is one Settle's arguments.
type settlement struct {
	key  string
	h    spend.Hold
	cost float64
}

// resend holds the settlements Redis did not confirm.
type resend struct {
	mu      sync.Mutex
	kept    []settlement
	n       atomic.Int64  // len(kept), read without the lock
	total   atomic.Uint64 // settlements ever kept
	dropped atomic.Uint64 // settlements past maxKept, lost
}

// keep keeps s to be sent again.
func (r *resend) keep(s settlement, err error, log *slog.Logger) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total.Add(1)
	if len(r.kept) >= maxKept {
		r.dropped.Add(1)
		log.Error("redisledger: a settlement Redis did not confirm is lost: too many kept", "key", s.key, "cost_usd", s.cost, "err", err)
		return
	}
	r.kept = append(r.kept, s)
	r.n.Store(int64(len(r.kept)))
	log.Warn("redisledger: a settlement Redis did not confirm is kept, to be sent again", "key", s.key, "cost_usd", s.cost, "err", err)
}

// resendSettles sends the kept settlements again, keeping those that fail
// once more. It costs nothing when none is kept.
func (l *Ledger) resendSettles() {
	if l.retry.n.Load() == 0 {
		return
	}
	l.retry.mu.Lock()
	kept := l.retry.kept
	l.retry.kept = nil
	l.retry.n.Store(0)
	l.retry.mu.Unlock()
	var failed []settlement
	for i, s := range kept {
		if err := l.settle(s); err != nil {
			failed = append(failed, kept[i:]...)
			break
		}
	}
	if len(failed) > 0 {
		l.retry.mu.Lock()
		l.retry.kept = append(failed, l.retry.kept...)
		l.retry.n.Store(int64(len(l.retry.kept)))
		l.retry.mu.Unlock()
	}
}

// Unconfirmed returns how many settlements were ever kept because Redis
// did not confirm them, how many wait to be sent again now, and how many
// were lost (more than 100,000 kept at once).
func (l *Ledger) Unconfirmed() (total uint64, waiting int64, lost uint64) {
	return l.retry.total.Load(), l.retry.n.Load(), l.retry.dropped.Load()
}

// run runs script; with Options.Replicas, in one pipelined round trip with
// a WAIT for the replicas, then again with EVAL if the server has not got
// the script (NOSCRIPT).
func (l *Ledger) run(ctx context.Context, script *redis.Script, keys []string, args ...any) *redis.Cmd {
	if l.opts.Replicas <= 0 {
		return script.Run(ctx, l.client, keys, args...)
	}
	cmd, acked := l.waited(ctx, script, keys, args, true)
	if err := cmd.Err(); err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
		cmd, acked = l.waited(ctx, script, keys, args, false)
	}
	if cmd.Err() == nil && acked < int64(l.opts.Replicas) {
		cmd.SetErr(ErrNotReplicated)
	}
	return cmd
}

// waited sends the script (by its SHA, or whole) and WAIT in one round
// trip, and returns the script's answer and the replicas that confirmed.
func (l *Ledger) waited(ctx context.Context, script *redis.Script, keys []string, args []any, sha bool) (*redis.Cmd, int64) {
	ms := max(l.opts.Timeout.Milliseconds()/4, 1) // Redis ends a WAIT on its next tick (hz), up to 100ms later
	var cmd *redis.Cmd
	var wait *redis.IntCmd
	l.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		if sha {
			cmd = script.EvalSha(ctx, p, keys, args...)
		} else {
			cmd = script.Eval(ctx, p, keys, args...)
		}
		wait = redis.NewIntCmd(ctx, "wait", l.opts.Replicas, ms)
		p.Process(ctx, wait)
		return nil
	})
	return cmd, wait.Val()
}
