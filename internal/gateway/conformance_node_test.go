package gateway

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/internal/nodetest"
)

// confNodeCases are the conformance table's cases run again with the
// Node SDKs: its text and tool-call cells.
var confNodeCases = []string{"text", "text streamed", "one tool call", "parallel tool calls",
	"tool call streamed, arguments in pieces"}

// TestConformanceNode runs the conformance table's text and tool-call
// cells with the official OpenAI and Anthropic Node SDKs as the clients
// (pinned in testdata/conformance-node), the same gateway and strict
// fakes as TestConformance, and checks the same outcomes. It skips when
// node or the installed SDKs are missing.
func TestConformanceNode(t *testing.T) {
	for _, c := range confCases {
		if !slices.Contains(confNodeCases, c.name) {
			continue
		}
		for _, out := range confEgress {
			t.Run(c.name+"/"+out, func(t *testing.T) {
				e, to := confEnv(t, out, c)
				env := []string{"GATEWAY=" + e.srv.URL, "STREAM=0", "TOOLS=0",
					"OPENAI_BASE_URL=", "OPENAI_API_KEY=", "ANTHROPIC_BASE_URL=", "ANTHROPIC_API_KEY=", "ANTHROPIC_AUTH_TOKEN="}
				if c.stream {
					env[1] = "STREAM=1"
				}
				if c.name != "text" && c.name != "text streamed" {
					env[2] = "TOOLS=1"
				}
				raw := nodetest.Run(t, "testdata/conformance-node", "conformance.mjs",
					"testdata/conformance-node/node_modules/@anthropic-ai/sdk/package.json",
					"npm ci --prefix internal/gateway/testdata/conformance-node", env...)
				var got map[string]struct {
					ID    string
					Text  string
					Calls []struct{ ID, Name, Args string }
					Stop  string
					Usage struct {
						Input, Output, CacheRead, CacheWrite int64
					}
					ArgDeltas int
				}
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatalf("script output %q: %v", raw, err)
				}
				if n := e.up.Calls(); n != 2 {
					t.Errorf("the primary got %d calls, want 2 (one per SDK)", n)
				}
				if n := to.Provider.Calls(); n != 2 {
					t.Errorf("the fallback got %d calls, want 2 (one per SDK)", n)
				}
				for _, in := range []string{"openai", "anthropic"} {
					t.Run(in, func(t *testing.T) {
						g := got[in]
						o := confOutcome{id: g.ID, text: g.Text, stop: g.Stop, argDeltas: g.ArgDeltas, usage: chat.Usage{
							Input: g.Usage.Input, Output: g.Usage.Output, CacheRead: g.Usage.CacheRead, CacheWrite: g.Usage.CacheWrite}}
						for _, tc := range g.Calls {
							o.calls = append(o.calls, chat.ToolCall{ID: tc.ID, Name: tc.Name, Args: json.RawMessage(tc.Args)})
						}
						checkConfAnswer(t, c, in, out, o)
					})
				}
			})
		}
	}
}
