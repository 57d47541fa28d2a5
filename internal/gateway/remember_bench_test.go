package gateway

import (
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	const body = `{"model":"gpt-4o-mini","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`
	for _, leg := range []string{"nokey", "newkey", "replay"} {
		b.Run(leg, func(b *testing.B) {
			dir := b.TempDir()
			cfg := config.Default()
			cfg.Providers["openai"] = config.Provider{Kind: config.KindOpenAI, BaseURL: srv.URL, MaxConcurrent: 64}
			st, err := filestore.Open(dir, filestore.Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			ledger, _ := spend.NewFileLedger(st.Records())
			limits, _ := limit.NewFile(st.Records())
			defer limits.Close()
			answers, err := idempotency.OpenFile(filepath.Join(dir, "answers"), idempotency.FileOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer answers.Close()
			gw, err := New(cfg, Options{Store: st, Ledger: ledger, Limits: limits, Answers: answers, AttemptLog: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			n := 0
			call := func() {
				req := httptest.NewRequest("POST", "/openai/v1/chat/completions", strings.NewReader(body))
				req.RemoteAddr = "127.0.0.1:1"
				switch leg {
				case "newkey":
					n++
					req.Header.Set("Idempotency-Key", "job-"+strconv.Itoa(n))
				case "replay":
					req.Header.Set("Idempotency-Key", "job-0")
				}
				w := httptest.NewRecorder()
				gw.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
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
				call()
			}
			before := srv.Calls()
			b.ReportAllocs()
			cpu := processCPU()
			for b.Loop() {
				call()
			}
			cpu.report(b)
			if leg == "replay" && srv.Calls() != before {
				b.Fatalf("%d upstream calls while replaying, want 0", srv.Calls()-before)
			}
		})
	}
}

// cpuMark is the process's CPU time, all its threads, at a point of a
// benchmark, as Linux counts it in /proc/self/stat: user and system time
// in clock ticks (10 ms). Elsewhere it is zero and reports nothing.
type cpuMark struct {
	user, sys int64
	ok        bool
}

// processCPU reads the process's CPU time.
func processCPU() cpuMark {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return cpuMark{}
	}
	// The command's name, in parentheses, may hold spaces: the fields are
	// counted after its last ')'. utime and stime are fields 14 and 15.
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 13 {
		return cpuMark{}
	}
	user, err1 := strconv.ParseInt(f[11], 10, 64)
	sys, err2 := strconv.ParseInt(f[12], 10, 64)
	return cpuMark{user: user, sys: sys, ok: err1 == nil && err2 == nil}
}

// report reports the process's CPU time per op since m — the gateway, the
// fake upstream and the client, the set-up left out — in user and in
// system time: user-ns/op and sys-ns/op. Counted in 10 ms ticks, they are
// coarse below some thousands of ops.
func (m cpuMark) report(b *testing.B) {
	now := processCPU()
	if !m.ok || !now.ok || b.N == 0 {
		return
	}
	perOp := func(ticks int64) float64 { return float64(ticks*int64(10*time.Millisecond)) / float64(b.N) }
	b.ReportMetric(perOp(now.user-m.user), "user-ns/op")
	b.ReportMetric(perOp(now.sys-m.sys), "sys-ns/op")
}
