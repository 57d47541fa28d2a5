package redislimit

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/limit"
)

// scripted is one script run of an admission's pipeline.
type scripted struct {
	script *redis.Script
	keys   []string
	args   []any
	cmd    *redis.Cmd
}

// Admit implements limit.Admitter: the pause key's HMGET, a reserve
// script per bucket (no wait: a slot due now or nothing) and an acquire
// script per gate go in one pipeline, one round trip. Each keeps its own
// key (its own hash slot), so that buckets, gates and pauses still spread
// over a Redis Cluster's nodes: there go-redis splits the pipeline by
// node and sends the parts at once, one round of parallel requests. The
// scripts go by their SHA; those a server does not know (NOSCRIPT, after
// a failover or a SCRIPT FLUSH) are sent again whole, in a second
// pipeline. On an error, the slots taken are given back.
func (s *Store) Admit(a *limit.Admission) error {
	ctx, cancel := s.ctx()
	defer cancel()
	pipe := s.client.Pipeline()
	pause := pipe.HMGet(ctx, s.rkey(a.Pause), learnedFields...)
	runs := make([]scripted, 0, len(a.Buckets)+len(a.Gates))
	for _, b := range a.Buckets {
		runs = append(runs, scripted{script: reserveScript, keys: []string{s.rkey(b.Key)}, args: s.reserveArgs(b.Rate, b.Cost, 0, 0)})
	}
	for i, g := range a.Gates {
		a.Gates[i].Token = s.leases.Add(1)
		runs = append(runs, scripted{script: acquireScript, keys: []string{s.rkey(g.Key)}, args: s.acquireArgs(g.Limit, g.Lease, a.Gates[i].Token)})
	}
	for i := range runs {
		runs[i].cmd = runs[i].script.EvalSha(ctx, pipe, runs[i].keys, runs[i].args...)
	}
	pipe.Exec(ctx) // each command's error is read from it below
	s.whole(ctx, runs)
	var err error
	if a.Learned, err = learned(a.Pause, pause); err != nil {
		s.giveBack(a, runs)
		return err
	}
	for i := range a.Buckets {
		ok, at, _, err := s.reserved(runs[i].cmd)
		if err != nil {
			s.giveBack(a, runs)
			return err
		}
		a.Buckets[i].OK, a.Buckets[i].At = ok, time.Unix(0, at)
	}
	for i := range a.Gates {
		ok, err := acquired(runs[len(a.Buckets)+i].cmd)
		if err != nil {
			s.giveBack(a, runs)
			return err
		}
		a.Gates[i].OK = ok
	}
	return nil
}

// whole sends again, whole (EVAL), in one pipeline, the runs the server
// answered NOSCRIPT: it ran none of them.
func (s *Store) whole(ctx context.Context, runs []scripted) {
	var again []int
	for i, r := range runs {
		if redis.HasErrorPrefix(r.cmd.Err(), "NOSCRIPT") {
			again = append(again, i)
		}
	}
	if len(again) == 0 {
		return
	}
	pipe := s.client.Pipeline()
	for _, i := range again {
		runs[i].cmd = runs[i].script.Eval(ctx, pipe, runs[i].keys, runs[i].args...)
	}
	pipe.Exec(ctx) // each command's error is read by Admit
}

// giveBack gives back, as far as Redis answers, the slots an admission
// that failed took: its reservations and its leases.
func (s *Store) giveBack(a *limit.Admission, runs []scripted) {
	for i, b := range a.Buckets {
		if ok, at, _, err := s.reserved(runs[i].cmd); err == nil && ok {
			s.Cancel(b.Key, b.Rate, time.Unix(0, at), b.Cost)
		}
	}
	for i, g := range a.Gates {
		if ok, err := acquired(runs[len(a.Buckets)+i].cmd); err == nil && ok {
			s.Release(g.Key, g.Token)
		}
	}
}
