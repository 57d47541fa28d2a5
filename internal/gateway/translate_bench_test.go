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

// BenchmarkTranslatedCall is what translation costs a client: an OpenAI
// call over loopback to the gateway, whose provider's breaker is open,
// answered over loopback by a fallback on the fake that speaks OpenAI
// (same) or Anthropic (translated), whole or streamed (benchBlocks text
// blocks, 3 pieces each). The client reads the whole answer.
func BenchmarkTranslatedCall(b *testing.B) {
	parts := make([]chat.Part, benchBlocks)
	for i := range parts {
		parts[i] = chat.Text("Block " + strconv.Itoa(i) + " of the answer, in three pieces. ")
	}
	up := fake.NewServer("200")
	defer up.Close()
	up.Provider.MaxRequests = 1 << 30
	up.Provider.Chat = &chat.Answer{Content: parts, Stop: chat.StopEndTurn, Usage: chat.Usage{Input: 9, Output: 120}}
	for _, stream := range []bool{false, true} {
		body := `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}`
		kind := "json"
		if stream {
			body = strings.Replace(body, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1)
			kind = "stream"
		}
		for _, tc := range []struct{ name, to, model string }{
			{"same", config.KindOpenAI, "gpt-4o-mini"}, {"translated", config.KindAnthropic, "claude-haiku-4-5"},
		} {
			b.Run(kind+"/"+tc.name, func(b *testing.B) {
				cfg := config.Default()
				cfg.State.Backend = config.BackendMemory
				p := cfg.Policies["interactive"]
				p.Breaker.Failures, p.Breaker.Cool = 1, time.Hour
				cfg.Policies["interactive"] = p
				cfg.Providers["openai"] = config.Provider{Kind: config.KindOpenAI, BaseURL: "http://127.0.0.1:9", MaxConcurrent: 64}
				cfg.Providers["backup"] = config.Provider{Kind: tc.to, BaseURL: up.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 64}
				cfg.Routes[0].Fallbacks = []config.Target{{Provider: "backup", Model: tc.model}}
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
					resp, err := client.Post(srv.URL+"/openai/v1/chat/completions", "application/json", strings.NewReader(body))
					if err != nil {
						b.Fatal(err)
					}
					var buf bytes.Buffer
					buf.ReadFrom(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "backup" {
						b.Fatalf("answered %d by %q: %s", resp.StatusCode, resp.Header.Get("Sluice-Provider"), buf.Bytes())
					}
					if want := "Block 15 of the"; !bytes.Contains(buf.Bytes(), []byte(want)) && !stream {
						b.Fatalf("the answer lacks %q: %s", want, buf.Bytes())
					}
					n = buf.Len()
				}
				call() // connection refused: the breaker opens, the fallback answers
				b.ReportAllocs()
				for b.Loop() {
					call()
				}
				b.ReportMetric(float64(n), "B/answer")
			})
		}
	}
}
