package gateway

import (
	"context"
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/breaker/filestore"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/idempotency"
	idemredis "github.com/sluice-llm/sluice/idempotency/redisstore"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/redisconn"
	"github.com/sluice-llm/sluice/internal/redistest"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/limit/redislimit"
	"github.com/sluice-llm/sluice/spend"
	"github.com/sluice-llm/sluice/spend/redisledger"
)

// roundTrips counts the round trips a go-redis client makes: one per
// command sent alone, one per pipeline.
type roundTrips struct{ n atomic.Int64 }

func (r *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmd)
	}
}

func (r *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.n.Add(1)
		return next(ctx, cmds)
	}
}

// BenchmarkForwardState is one chat call through the gateway to the fake
// provider, the state in the state directory (file) or in Redis (redis),
// with each feature that touches the state on its own: plain (a closed
// breaker, and the provider's max_concurrent gate and key pause every call
// has), plus a daily budget, plus a rate limit, plus an Idempotency-Key. Against
// Redis it reports the round trips per call (rtt/op), counted by a hook
// on the client, the breaker's refresh (every 250 ms) included.
func BenchmarkForwardState(b *testing.B) {
	srv := fake.NewServer("200")
	defer srv.Close()
	srv.Provider.MaxRequests = 100
	rs := redistest.Start(b)
	for _, backend := range []string{"file", "redis"} {
		for _, feature := range []string{"plain", "budget", "limit", "answers"} {
			b.Run(backend+"/"+feature, func(b *testing.B) {
				cfg := config.Default()
				cfg.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: srv.URL, MaxConcurrent: 64}
				switch feature {
				case "budget":
					cfg.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 1e9, Period: "day", Scope: "all"}}
					cfg.Prices = map[string]spend.Price{"*": {Input: 0.15, Output: 0.6}}
				case "limit":
					cfg.Limits.Rates = []limit.Limit{{Name: "rpm", Requests: limit.Rate{Limit: 1e9, Per: time.Minute}}}
				}
				opt := Options{AttemptLog: io.Discard}
				var rt *roundTrips
				if backend == "file" {
					dir := b.TempDir()
					st, err := filestore.Open(dir, filestore.Options{})
					if err != nil {
						b.Fatal(err)
					}
					defer st.Close()
					ledger, _ := spend.NewFileLedger(st.Records())
					limits, _ := limit.NewFile(st.Records())
					defer limits.Close()
					answers, err := idempotency.OpenFile(dir+"/answers", idempotency.FileOptions{})
					if err != nil {
						b.Fatal(err)
					}
					defer answers.Close()
					opt.Store, opt.Ledger, opt.Limits, opt.Answers = st, ledger, limits, answers
				} else {
					c, err := redisconn.New(redisconn.Config{URL: rs.URL(), Timeout: time.Second})
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					rt = &roundTrips{}
					c.AddHook(rt)
					st, err := redisstore.New(redisstore.Options{Client: c, Prefix: "bench" + strconv.Itoa(b.N) + feature + ":"})
					if err != nil {
						b.Fatal(err)
					}
					defer st.Close()
					limits, _ := redislimit.New(c, redislimit.Options{})
					opt.Store, opt.Ledger, opt.Limits = st, redisledger.New(c, redisledger.Options{}), limits
					opt.Answers = idemredis.New(c, idemredis.Options{})
				}
				gw, err := New(cfg, opt)
				if err != nil {
					b.Fatal(err)
				}
				defer gw.Close()
				run := strconv.FormatInt(time.Now().UnixNano(), 36) // a fresh key per call, run after run
				body := `{"model":"gpt-4o-mini","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
				call := func(i int) {
					req := httptest.NewRequest("POST", "/openai/v1/chat/completions", strings.NewReader(body))
					req.RemoteAddr = "127.0.0.1:1"
					if feature == "answers" {
						req.Header.Set("Idempotency-Key", "job-"+run+"-"+strconv.Itoa(i))
					}
					w := httptest.NewRecorder()
					gw.ServeHTTP(w, req)
					if w.Code != 200 {
						b.Fatalf("status %d: %s", w.Code, w.Body)
					}
				}
				for i := range 20 { // steady state: first loads and script loads done
					call(-1 - i)
				}
				var before int64
				if rt != nil {
					before = rt.n.Load()
				}
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					call(i)
					i++
				}
				if rt != nil {
					b.ReportMetric(float64(rt.n.Load()-before)/float64(i), "rtt/op")
				}
			})
		}
	}
}
