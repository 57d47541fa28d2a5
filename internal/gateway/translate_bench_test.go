package gateway

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

// benchBlocks is how many text blocks the fallback's answer holds: a
// stream of 3 pieces each (fake.Provider.Chat), 48 text events.
const benchBlocks = 16

// BenchmarkTranslatedCall is what translation costs a client: a call over
// loopback to the gateway, whose provider's breaker is open, answered
// over loopback by a fallback on the fake, whole or streamed (benchBlocks
// text blocks, 3 pieces each); the client reads the whole answer. The
// name says the client's dialect and the fallback's: openai-openai and
// anthropic-anthropic are same-dialect calls, openai-anthropic and
// anthropic-openai translated ones. A translated call is best set against
// the same-dialect call of the same fallback (the fake's side is the
// same): openai-anthropic against anthropic-anthropic, anthropic-openai
// against openai-openai. Beside the time, it reports the process's CPU
// per call inside the timed loop (user-ns/op, sys-ns/op: the client, the
// gateway and the fake together).
func BenchmarkTranslatedCall(b *testing.B) {
	up := benchUpstream(b)
	for _, kind := range []string{"json", "stream"} {
		for _, pair := range [][2]string{
			{"openai", "openai"}, {"openai", "anthropic"},
			{"anthropic", "anthropic"}, {"anthropic", "openai"},
		} {
			b.Run(kind+"/"+pair[0]+"-"+pair[1], func(b *testing.B) {
				call := translatedLeg(b, up, pair[0], pair[1], kind == "stream")
				b.ReportAllocs()
				cpu := processCPU()
				var n int
				for b.Loop() {
					n = call()
				}
				cpu.report(b)
				b.ReportMetric(float64(n), "B/answer")
			})
		}
	}
}

// BenchmarkTranslatedPair is BenchmarkTranslatedCall's two calls of one
// fallback set side by side in one process: the translated call and the
// same-dialect call, each with a gateway of its own, warmed up by 100
// calls each, then run in turns (inTurns). An op is one call of each. It
// reports each call's wall time (translated-ns/call, same-ns/call) and
// the process's CPU while each ran (translated-cpu-ns/call,
// same-cpu-ns/call: the client, the gateway and the fake together), and
// their ratios (wall-ratio, cpu-ratio): what translation costs, measured
// in one run.
func BenchmarkTranslatedPair(b *testing.B) {
	up := benchUpstream(b)
	for _, kind := range []string{"json", "stream"} {
		for _, pair := range [][3]string{
			{"openai", "anthropic", "anthropic"},
			{"anthropic", "openai", "openai"},
		} {
			from, to, same := pair[0], pair[1], pair[2]
			b.Run(kind+"/"+from+"-"+to, func(b *testing.B) {
				stream := kind == "stream"
				tr, sm := translatedLeg(b, up, from, to, stream), translatedLeg(b, up, same, to, stream)
				for range 100 { // warm: connections open, pools filled
					tr()
					sm()
				}
				inTurns(b, [2]string{"translated", "same"}, [2]func(){func() { tr() }, func() { sm() }})
			})
		}
	}
}

// benchUpstream is the fake the benchmarks' fallbacks call: an answer of
// benchBlocks text blocks, in any dialect.
func benchUpstream(b *testing.B) *fake.Server {
	parts := make([]chat.Part, benchBlocks)
	for i := range parts {
		parts[i] = chat.Text("Block " + strconv.Itoa(i) + " of the answer, in three pieces. ")
	}
	up := fake.NewServer("200")
	b.Cleanup(up.Close)
	up.Provider.MaxRequests = 1 << 30
	up.Provider.Chat = &chat.Answer{Content: parts, Stop: chat.StopEndTurn, Usage: chat.Usage{Input: 9, Output: 120}}
	return up
}

// translatedLeg starts a gateway whose route of kind in has a dead
// provider and a fallback of kind to on up, opens its breaker with one
// call, and returns a call through it: the client's whole answer read,
// its size returned. The gateway stops when b ends.
func translatedLeg(b *testing.B, up *fake.Server, in, to string, stream bool) func() int {
	bodies := map[string]string{
		"openai":    `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}`,
		"anthropic": `{"model":"claude-haiku-4-5","max_tokens":1024,"system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`,
	}
	paths := map[string]string{"openai": "/openai/v1/chat/completions", "anthropic": "/anthropic/v1/messages"}
	models := map[string]string{"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}
	body := bodies[in]
	if stream {
		opts := `"stream":true,`
		if in == "openai" {
			opts += `"stream_options":{"include_usage":true},`
		}
		body = strings.Replace(body, "{", "{"+opts, 1)
	}
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	p := cfg.Policies["interactive"]
	p.Breaker.Failures, p.Breaker.Cool = 1, time.Hour
	cfg.Policies["interactive"] = p
	cfg.Providers[in] = config.Provider{Kind: in, BaseURL: "http://127.0.0.1:9", MaxConcurrent: 64}
	cfg.Providers["backup"] = config.Provider{Kind: to, BaseURL: up.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 64}
	for i := range cfg.Routes {
		if cfg.Routes[i].Provider == in {
			cfg.Routes[i].Fallbacks = []config.Target{{Provider: "backup", Model: models[to]}}
		}
	}
	gw, err := New(cfg, Options{AttemptLog: io.Discard, Logger: slog.New(slog.DiscardHandler), Getenv: func(string) string { return "sk-bench" }})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	b.Cleanup(func() {
		client.CloseIdleConnections()
		srv.Close()
		gw.Close()
	})
	call := func() int {
		req, _ := http.NewRequest("POST", srv.URL+paths[in], strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if in == "anthropic" {
			req.Header.Set("Anthropic-Version", "2023-06-01")
		}
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		buf.ReadFrom(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "backup" {
			b.Fatalf("answered %d by %q: %s", resp.StatusCode, resp.Header.Get("Sluice-Provider"), buf.Bytes())
		}
		if want := "Block 15 of the"; !stream && !bytes.Contains(buf.Bytes(), []byte(want)) {
			b.Fatalf("the answer lacks %q: %s", want, buf.Bytes())
		}
		return buf.Len()
	}
	call() // connection refused: the breaker opens, the fallback answers
	return call
}
