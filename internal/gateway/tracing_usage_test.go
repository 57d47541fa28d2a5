package gateway

import (
	"testing"

	"github.com/sluice-llm/sluice/internal/config"
)

// A call's usage is read in the dialect of its route's provider: a Gemini
// answer's usageMetadata, whole or streamed, is the call span's.
func TestTracingUsageInTheRouteDialect(t *testing.T) {
	for _, path := range []string{geminiGenerate, geminiStreamed} {
		t.Run(path, func(t *testing.T) {
			rcv := newOTLPReceiver(t)
			e := newEnv(t, "200", func(c *config.Config) {
				c.Tracing = config.Tracing{Enabled: true, Endpoint: "http://" + rcv.Listener.Addr().String() + "/v1/traces", SampleRatio: 1}
				withGemini(c)
			})
			rcv.Start()
			t.Cleanup(rcv.Close)
			resp := e.do("POST", path, geminiBody)
			if b := body(t, resp); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			call, _ := splitSpans(t, rcv.await(t, e.gw, 2))
			ca := attrs(call)
			// The fake counts a body's bytes / 4 as its prompt tokens.
			if in, out := ca["gen_ai.usage.input_tokens"], ca["gen_ai.usage.output_tokens"]; in != int64(len(geminiBody)/4) || out == nil || out.(int64) <= 0 {
				t.Errorf("call span usage in %v out %v; want in %d, out > 0", in, out, len(geminiBody)/4)
			}
		})
	}
}
