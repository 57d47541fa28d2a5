package check

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/redisconn"
)

// redisWait bounds the question check asks of the state's Redis.
const redisWait = 5 * time.Second

// redisRefuses asks the state's Redis, as sluice serve does at start,
// whether it can serve the stores: a sentinel or cluster no seed of which
// answers, a cluster whose state is fail, a single server that is a
// cluster node, or a password variable that is unset. A single server that
// does not answer is not refused (serve starts on local state).
func redisRefuses(c *config.Config) error {
	if c.State.Backend != config.BackendRedis {
		return nil
	}
	rc, err := c.RedisConn()
	if err != nil {
		return err
	}
	redis.SetLogger(quiet{}) // go-redis's own dial failures: the one line below says it all
	ctx, cancel := context.WithTimeout(context.Background(), redisWait)
	defer cancel()
	if err := redisconn.Probe(ctx, rc); err != nil {
		where := "state.url"
		if rc.Mode == redisconn.Sentinel || rc.Mode == redisconn.Cluster {
			where = "state.redis"
		}
		return fmt.Errorf("%s: %v", where, err)
	}
	return nil
}

// quiet is a go-redis logger that says nothing.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
