package redisconn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/redisconn"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// Probe against a real Sentinel deployment: a sentinel given as the one
// server is refused, with or without credentials in the URL (a sentinel
// refuses a password it has none for), naming the master it watches and
// never the password; an address in addrs that does not answer, or that
// is a data node, is a warning naming it, while the others serve.
func TestProbeSeesSentinels(t *testing.T) {
	h := redistest.StartSentinel(t, time.Minute)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s := h.Addrs()[0]
	for _, c := range []redisconn.Config{
		{URL: "redis://" + s + "/0"},
		{URL: "redis://:hunter2@" + s + "/0"},
		{URL: "redis://" + s + "/0", Username: "sluice", Password: "hunter2"},
	} {
		ws, err := redisconn.Probe(ctx, c)
		if err == nil || !strings.Contains(err.Error(), "redis at state.url ("+s+") is a sentinel") ||
			!strings.Contains(err.Error(), "master: "+redistest.MasterName) || strings.Contains(err.Error(), "hunter2") || len(ws) != 0 {
			t.Errorf("url at a sentinel (password %v): %v, warnings %q; want refused as a sentinel, the master named, no password", c.Password != "" || strings.Contains(c.URL, "@"), err, ws)
		}
	}

	dead := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	data := h.Replicas[0].Addr()
	ws, err := redisconn.Probe(ctx, redisconn.Config{Mode: redisconn.Sentinel, Master: redistest.MasterName,
		Addrs: []string{h.Addrs()[0], dead, data, h.Addrs()[1]}})
	if err != nil {
		t.Fatalf("two sentinels of four answer: %v", err)
	}
	want := []string{"sentinel " + dead + " does not answer (dial tcp", data + " in state.redis.addrs is not a sentinel"}
	if len(ws) != 2 {
		t.Fatalf("warnings %q; want two, %q", ws, want)
	}
	for i, w := range want {
		if !strings.Contains(ws[i], w) || !strings.Contains(ws[i], "2 of the 4 sentinels") {
			t.Errorf("warning %q; want %q and 2 of the 4", ws[i], w)
		}
	}
}

// A cluster's seed node that does not answer, while another does, is a
// warning naming it; the cluster still serves.
func TestProbeWarnsOfASeedDown(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dead := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	ws, err := redisconn.Probe(ctx, redisconn.Config{Mode: redisconn.Cluster, Addrs: []string{dead, cl.Addrs()[0]}})
	if err != nil || len(ws) != 1 || !strings.Contains(ws[0], "seed node "+dead+" does not answer (dial tcp") || !strings.Contains(ws[0], "1 of the 2 seeds") {
		t.Errorf("a seed down, another up: %v, warnings %q; want one warning naming %s", err, ws, dead)
	}
	if ws, err := redisconn.Probe(ctx, redisconn.Config{Mode: redisconn.Cluster, Addrs: cl.Addrs()}); err != nil || len(ws) != 0 {
		t.Errorf("every seed up: %v, warnings %q; want none", err, ws)
	}
}
