package gateway

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/nodetest"
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
			var lines []map[string]any // the last line is written as the body ends, after the client has its end
			for deadline := time.Now().Add(5 * time.Second); len(lines) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				lines = e.logLines()
			}
			if len(lines) != 2 || lines[0]["outcome"] != string(sluice.OutcomeResumed) || lines[1]["outcome"] != string(sluice.OutcomeOK) {
				t.Errorf("log lines %+v, want resumed then ok", lines)
			}
		})
	}
}

// TestOpenAISDKHedgedCall: a call whose first attempt is slow to answer
// is raced by a hedge; the SDK gets the hedge's answer at once, the first
// attempt is cancelled and logged hedge_lost, and the metric counts the
// hedge won.
func TestOpenAISDKHedgedCall(t *testing.T) {
	e := newEnv(t, "slow:4s,200", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Timeout.FirstByte, p.Timeout.Total = 8*time.Second, 10*time.Second
		p.Hedge = sluice.Hedge{After: sluice.HedgeAfter{Wait: 100 * time.Millisecond}, MaxShare: 1}
		c.Policies["interactive"] = p
	})
	c := e.openaiClient()
	start := time.Now()
	resp, err := c.Chat.Completions.New(sdkContext(t), chatParams())
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second || resp.Choices[0].Message.Content != fakeAnswer {
		t.Fatalf("answered %q in %v; want the hedge's answer at once", resp.Choices[0].Message.Content, took)
	}
	var lines []map[string]any
	for deadline := time.Now().Add(5 * time.Second); len(lines) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		lines = e.logLines()
	}
	outcomes := map[string]string{}
	for _, l := range lines {
		outcomes[fmt.Sprint(l["hedge"])] = fmt.Sprint(l["outcome"])
	}
	if len(lines) != 2 || outcomes["sent"] != "ok" || outcomes["<nil>"] != string(sluice.OutcomeHedgeLost) {
		t.Errorf("lines %v, want the hedge ok and the first hedge_lost", lines)
	}
	if m := body(t, e.do("GET", "/metrics", "")); !strings.Contains(m, `sluice_hedges_total{result="won"} 1`+"\n") {
		t.Errorf("the metric does not count the hedge won:\n%s", grepLines(m, "hedges"))
	}
	if h := e.status().Hedges; h.Calls != 1 || h.Sent != 1 || h.Won != 1 || h.Refused != 0 || h.Rate != 1 {
		t.Errorf("status.json hedges %+v; want 1 call, 1 hedge sent and won, a rate of 1", h)
	}
}

// TestAnthropicSDKReadsAResumedStream: an Anthropic stream cut after its
// answer began, with no attempt left on its provider, goes on at the
// route's fallback, which speaks OpenAI: the call starts again there,
// translated, and what it repeats is not relayed twice. The Anthropic SDK
// reads one stream: one message_start, the text once, message_stop.
func TestAnthropicSDKReadsAResumedStream(t *testing.T) {
	e := newEnv(t, "stream:cut-after=4,200", func(c *config.Config) {
		resumeOn(c)
		p := c.Policies["interactive"]
		p.Retry.MaxAttempts = 1
		c.Policies["interactive"] = p
		o := c.Providers["openai"]
		o.APIKeyEnv = "UPSTREAM_KEY"
		c.Providers["openai"] = o
		for i, r := range c.Routes {
			if r.Provider == "anthropic" {
				c.Routes[i].Fallbacks = []config.Target{{Provider: "openai", Model: "gpt-4o-mini"}}
			}
		}
	})
	c := e.anthropicClient()
	text, types, err := anthropicStream(t, &c)
	if err != nil {
		t.Fatalf("the resumed stream ended with %v after %q (events %v)", err, text, types)
	}
	if text != fakeAnswer {
		t.Errorf("streamed %q, want %q once", text, fakeAnswer)
	}
	starts := 0
	for _, typ := range types {
		if typ == "message_start" {
			starts++
		}
	}
	if starts != 1 || types[len(types)-1] != "message_stop" {
		t.Errorf("events %v, want one message_start … message_stop", types)
	}
	reqs := e.up.Requests()
	if len(reqs) != 2 || !strings.HasSuffix(reqs[1].Path, "/chat/completions") {
		t.Fatalf("upstream requests %d, the second to %v; want the fallback's chat completions", len(reqs), reqs)
	}
}

// TestAnthropicSDKReadsAPrefilledStream: an Anthropic stream cut after
// its answer began goes on at the same provider, the text sent so far the
// assistant's prefix; the provider continues it and the Anthropic SDK
// reads one stream, the text once, strict request rules kept.
func TestAnthropicSDKReadsAPrefilledStream(t *testing.T) {
	e := newEnv(t, "stream:cut-after=4,200", resumeOn)
	e.up.Strict = true
	c := e.anthropicClient()
	text, types, err := anthropicStream(t, &c)
	if err != nil {
		t.Fatalf("the resumed stream ended with %v after %q (events %v)", err, text, types)
	}
	if text != fakeAnswer || countOf(types, "message_start") != 1 || types[len(types)-1] != "message_stop" {
		t.Errorf("streamed %q in %v, want %q once in one message", text, types, fakeAnswer)
	}
	reqs := e.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream requests, want the cut one and its continuation", len(reqs))
	}
	var sent struct {
		Messages []struct {
			Role    string `json:"role"`
			Content any    `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(reqs[1].Body, &sent); err != nil || len(sent.Messages) == 0 {
		t.Fatalf("continuation %s: %v", reqs[1].Body, err)
	}
	last := sent.Messages[len(sent.Messages)-1]
	if p := fmt.Sprint(last.Content); last.Role != "assistant" || p == "" || len(p) >= len(fakeAnswer) || !strings.HasPrefix(fakeAnswer, p) {
		t.Errorf("the continuation ends with %+v, want the assistant's text sent so far", last)
	}
}

// countOf counts s in list.
func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// TestNodeSDKsReadAResumedStream: the official Node SDKs read a rescued
// stream as one. The OpenAI SDK's stream is cut and started again on its
// provider; the Anthropic SDK's is cut, and goes on at an OpenAI
// fallback, translated. Each reads the whole answer once, and its end.
func TestNodeSDKsReadAResumedStream(t *testing.T) {
	e := newEnv(t, "stream:cut-after=3,200,stream:cut-after=3,200", func(c *config.Config) {
		resumeOn(c)
		once := c.Policies["interactive"]
		once.Name, once.Retry.MaxAttempts = "once", 1
		c.Policies["once"] = once
		o := c.Providers["openai"]
		o.APIKeyEnv = "UPSTREAM_KEY"
		c.Providers["openai"] = o
		for i, r := range c.Routes {
			if r.Provider == "anthropic" {
				c.Routes[i].Policy = "once"
				c.Routes[i].Fallbacks = []config.Target{{Provider: "openai", Model: "gpt-4o-mini"}}
			}
		}
	})
	raw := nodetest.Run(t, "testdata/conformance-node", "conformance.mjs",
		"testdata/conformance-node/node_modules/@anthropic-ai/sdk/package.json",
		"npm ci --prefix internal/gateway/testdata/conformance-node",
		"GATEWAY="+e.srv.URL, "STREAM=1", "TOOLS=0",
		"OPENAI_BASE_URL=", "OPENAI_API_KEY=", "ANTHROPIC_BASE_URL=", "ANTHROPIC_API_KEY=", "ANTHROPIC_AUTH_TOKEN=")
	var got map[string]struct{ Text, Stop string }
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("script output %q: %v", raw, err)
	}
	if o, a := got["openai"], got["anthropic"]; o.Text != fakeAnswer || o.Stop != "stop" || a.Text != fakeAnswer || a.Stop != "end_turn" {
		t.Errorf("the Node SDKs read %+v; want %q once from each, and its stop", got, fakeAnswer)
	}
	if n := e.up.Calls(); n != 4 {
		t.Errorf("upstream calls %d, want 4: each stream's and its continuation", n)
	}
	resumed := 0
	for _, l := range e.logLines() {
		if l["outcome"] == string(sluice.OutcomeResumed) {
			resumed++
		}
	}
	if resumed != 2 {
		t.Errorf("%d resumed lines, want 2", resumed)
	}
}
