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
	parts := make([]chat.Part, benchBlocks)
	for i := range parts {
		parts[i] = chat.Text("Block " + strconv.Itoa(i) + " of the answer, in three pieces. ")
	}
	up := fake.NewServer("200")
	defer up.Close()
	up.Provider.MaxRequests = 1 << 30
	up.Provider.Chat = &chat.Answer{Content: parts, Stop: chat.StopEndTurn, Usage: chat.Usage{Input: 9, Output: 120}}
	bodies := map[string]string{
		config.KindOpenAI:    `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}`,
		config.KindAnthropic: `{"model":"claude-haiku-4-5","max_tokens":1024,"system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`,
	}
	paths := map[string]string{config.KindOpenAI: "/openai/v1/chat/completions", config.KindAnthropic: "/anthropic/v1/messages"}
	models := map[string]string{config.KindOpenAI: "gpt-4o-mini", config.KindAnthropic: "claude-haiku-4-5"}
	for _, stream := range []bool{false, true} {
		kind := "json"
		if stream {
			kind = "stream"
		}
		for _, pair := range [][2]string{
			{config.KindOpenAI, config.KindOpenAI}, {config.KindOpenAI, config.KindAnthropic},
			{config.KindAnthropic, config.KindAnthropic}, {config.KindAnthropic, config.KindOpenAI},
		} {
			in, to := pair[0], pair[1]
			body := bodies[in]
			if stream {
				opts := `"stream":true,`
				if in == config.KindOpenAI {
					opts += `"stream_options":{"include_usage":true},`
				}
				body = strings.Replace(body, "{", "{"+opts, 1)
			}
			b.Run(kind+"/"+in+"-"+to, func(b *testing.B) {
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
				defer gw.Close()
				srv := httptest.NewServer(gw)
				defer srv.Close()
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
				defer client.CloseIdleConnections()
				var n int
				call := func() {
					req, _ := http.NewRequest("POST", srv.URL+paths[in], strings.NewReader(body))
					req.Header.Set("Content-Type", "application/json")
					if in == config.KindAnthropic {
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
					n = buf.Len()
				}
				call() // connection refused: the breaker opens, the fallback answers
				b.ReportAllocs()
				cpu := processCPU()
				for b.Loop() {
					call()
				}
				cpu.report(b)
				b.ReportMetric(float64(n), "B/answer")
			})
		}
	}
}
