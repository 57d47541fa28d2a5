package gateway

import (
	"strings"
	"testing"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
)

// resumeOn sets resume on the interactive policy.
func resumeOn(c *config.Config) {
	p := c.Policies["interactive"]
	p.Resume = true
	c.Policies["interactive"] = p
}

// TestOpenAISDKReadsAResumedStream: a stream cut, stalled or ended by an
// error event after its answer began is started again, and the OpenAI
// SDK reads one stream with each word once.
func TestOpenAISDKReadsAResumedStream(t *testing.T) {
	for _, script := range []string{"stream:cut-after=3,200", "stream:stall-after=3,200", "stream:error-after=3,200"} {
		t.Run(script, func(t *testing.T) {
			e := newEnv(t, script, resumeOn)
			c := e.openaiClient()
			stream := c.Chat.Completions.NewStreaming(sdkContext(t), chatParams())
			defer stream.Close()
			var text strings.Builder
			roles := 0
			for stream.Next() {
				for _, ch := range stream.Current().Choices {
					text.WriteString(ch.Delta.Content)
					if ch.Delta.Role != "" {
						roles++
					}
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatalf("the resumed stream ended with %v after %q", err, text.String())
			}
			if text.String() != fakeAnswer || roles != 1 {
				t.Errorf("streamed %q with %d role deltas, want %q once", text.String(), roles, fakeAnswer)
			}
			if e.up.Calls() != 2 {
				t.Errorf("upstream calls %d, want 2", e.up.Calls())
			}
			lines := e.logLines()
			if len(lines) != 2 || lines[0]["outcome"] != string(sluice.OutcomeResumed) || lines[1]["outcome"] != string(sluice.OutcomeOK) {
				t.Errorf("log lines %+v, want resumed then ok", lines)
			}
		})
	}
}
