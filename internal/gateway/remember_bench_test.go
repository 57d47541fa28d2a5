package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker/filestore"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// BenchmarkIdempotency is one chat call through the gateway on file state,
// answers kept in the state directory: without an Idempotency-Key (what
// the feature costs a call that does not use it), with a new key each
// call (the mark taken, the answer kept), and a duplicate answered from
// its kept answer (a replay, no upstream call).
func BenchmarkIdempotency(b *testing.B) {
	srv := fake.NewServer("200")
	defer srv.Close()
	srv.Provider.MaxRequests = 100
	for _, leg := range []string{"nokey", "newkey", "replay"} {
		b.Run(leg, func(b *testing.B) {
			call := keyedGateway(b, srv, nil)
			n := 0
			key := func() string {
				switch leg {
				case "newkey":
					n++
					return "job-" + strconv.Itoa(n)
				case "replay":
					return "job-0"
				}
				return ""
			}
			// The replay leg's first call keeps its answer. The others warm
			// up as a gateway that has run a while: every shard's lock file
			// and answer log exist (a new directory creates 512 files, one
			// at the first call of each shard, a cost paid once per host).
			warm := 1
			if leg != "replay" {
				warm = 2000
			}
			for range warm {
				call(key())
			}
			before := srv.Calls()
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				call(key())
			}
			cpu.report(b)
			if leg == "replay" && srv.Calls() != before {
				b.Fatalf("%d upstream calls while replaying, want 0", srv.Calls()-before)
			}
		})
	}
}

// BenchmarkIdempotencyPair is BenchmarkIdempotency's newkey and nokey
// legs side by side on one gateway, warmed up by 2,000 calls with new
// keys, then run in turns (inTurns). An op is one call of each. It
// reports each leg's wall time (newkey-ns/call, nokey-ns/call), the
// process's CPU while each ran (newkey-cpu-ns/call, nokey-cpu-ns/call),
// and their ratios (wall-ratio, cpu-ratio): what a new key costs, in one
// run. The calls carry no credential (anonymous), as earlier runs' did,
// or an API key, as an SDK's do (apikey): the caller it names is part of
// the key, and the answer is looked through for it before it is kept.
func BenchmarkIdempotencyPair(b *testing.B) {
	for _, caller := range []string{"anonymous", "apikey"} {
		b.Run(caller, func(b *testing.B) {
			srv := fake.NewServer("200")
			defer srv.Close()
			srv.Provider.MaxRequests = 100
			var h http.Header // none: anonymous
			if caller == "apikey" {
				h = http.Header{"Authorization": {"Bearer sk-proj-" + strings.Repeat("x", 40)}} // as the OpenAI SDK sends it
			}
			call := keyedGateway(b, srv, h)
			n := 0
			legs := [2]func(){
				func() { n++; call("job-" + strconv.Itoa(n)) },
				func() { call("") },
			}
			for range 2000 {
				legs[0]()
			}
			inTurns(b, [2]string{"newkey", "nokey"}, legs)
		})
	}
}

// inTurns runs b.N calls of each of two legs, in turns of 25 calls, so
// that a machine that speeds up or slows down does so for both. It
// reports each leg's wall time per call (name-ns/call), the process's CPU
// while it ran (name-cpu-ns/call, where getrusage is), and the first
// leg's over the second's (wall-ratio, cpu-ratio).
func inTurns(b *testing.B, names [2]string, legs [2]func()) {
	const turn = 25
	var wall, cpu [2]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += turn {
		for l, leg := range legs {
			t0, c0 := time.Now(), processCPU()
			for range min(turn, b.N-i) {
				leg()
			}
			wall[l] += time.Since(t0)
			cpu[l] += processCPU().total() - c0.total()
		}
	}
	per := func(d time.Duration) float64 { return float64(d) / float64(b.N) }
	b.ReportMetric(float64(wall[0])/float64(wall[1]), "wall-ratio")
	if cpu[1] > 0 {
		b.ReportMetric(float64(cpu[0])/float64(cpu[1]), "cpu-ratio")
	}
	for l, name := range names {
		b.ReportMetric(per(wall[l]), name+"-ns/call")
		if cpu[1] > 0 {
			b.ReportMetric(per(cpu[l]), name+"-cpu-ns/call")
		}
	}
}

// keyedGateway starts a gateway on file state in a directory of b's,
// answers kept, its provider the fake srv, and returns a chat call to it
// with the Idempotency-Key key ("" sends none) and the headers of h (nil:
// none). The gateway stops when b ends.
func keyedGateway(b *testing.B, srv *fake.Server, h http.Header) func(key string) {
	const body = `{"model":"gpt-4o-mini","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	dir := b.TempDir()
	cfg := config.Default()
	cfg.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: srv.URL, MaxConcurrent: 64}
	st, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ledger, _ := spend.NewFileLedger(st.Records())
	limits, _ := limit.NewFile(st.Records())
	answers, err := idempotency.OpenFile(filepath.Join(dir, "answers"), idempotency.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	gw, err := New(cfg, Options{Store: st, Ledger: ledger, Limits: limits, Answers: answers, AttemptLog: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		gw.Close()
		answers.Close()
		limits.Close()
		st.Close()
	})
	return func(key string) {
		req := httptest.NewRequest("POST", "/openai/v1/chat/completions", strings.NewReader(body))
		req.RemoteAddr = "127.0.0.1:1"
		for name, vs := range h {
			req.Header[name] = slices.Clone(vs)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		w := httptest.NewRecorder()
		gw.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// cpuMark is the process's CPU time, all its threads, at a point of a
// benchmark, in user and in system time (processCPU reads it). Where
// there is no getrusage it is zero and reports nothing.
type cpuMark struct {
	user, sys time.Duration
	ok        bool
}

// total is m's user and system time together.
func (m cpuMark) total() time.Duration { return m.user + m.sys }

// report reports the process's CPU time per op since m — the gateway, the
// fake upstream and the client, the set-up left out — in user and in
// system time: user-ns/op and sys-ns/op.
func (m cpuMark) report(b *testing.B) {
	now := processCPU()
	if !m.ok || !now.ok || b.N == 0 {
		return
	}
	perOp := func(d time.Duration) float64 { return float64(d) / float64(b.N) }
	b.ReportMetric(perOp(now.user-m.user), "user-ns/op")
	b.ReportMetric(perOp(now.sys-m.sys), "sys-ns/op")
}
