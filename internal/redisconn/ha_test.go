package redisconn_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/redisconn"
	"github.com/sluice-llm/sluice/internal/redistest"
)

func TestHarnessSentinelAndCluster(t *testing.T) {
	h := redistest.StartSentinel(t, time.Second)
	c, err := redisconn.New(redisconn.Config{Mode: redisconn.Sentinel, Addrs: h.Addrs(), Master: redistest.MasterName, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cl := redistest.StartCluster(t, 3)
	cc, err := redisconn.New(redisconn.Config{Mode: redisconn.Cluster, Addrs: cl.Addrs()[:1], Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	for _, k := range []string{"a", "b", "c", "d"} {
		if err := cc.Set(context.Background(), k, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
