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

// askRedis asks the state's Redis, as sluice serve does at start,
// whether it can serve the stores. It returns an error for what serve
// refuses: sentinels none of which answers or knows the master, a cluster
// no seed of which answers or whose state is fail, a state.url that is a
// sentinel, a cluster node or a replica, credentials refused, a password
// variable that is unset. It returns warnings (kind state) for what serve
// starts with on local state or with less than it was given: a sentinel
// that does not answer or does not know the master, a cluster seed that
// does not answer, a master or single server that does not answer.
func askRedis(c *config.Config) ([]warning, error) {
	if c.State.Backend != config.BackendRedis {
		return nil, nil
	}
	rc, err := c.RedisConn()
	if err != nil {
		return nil, err
	}
	redis.SetLogger(quiet{}) // go-redis's own dial failures: the one line below says it all
	ctx, cancel := context.WithTimeout(context.Background(), redisWait)
	defer cancel()
	where := "state.url"
	if rc.Mode == redisconn.Sentinel || rc.Mode == redisconn.Cluster {
		where = "state.redis"
	}
	ws, err := redisconn.Probe(ctx, rc)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", where, err)
	}
	var out []warning
	for _, w := range ws {
		out = append(out, warning{Kind: "state", Message: where + ": " + w})
	}
	return out, nil
}

// quiet is a go-redis logger that says nothing.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
