package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRLBodyHasExactlyTheBytesAsked(t *testing.T) {
	b, err := rlBody(400, 400)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 400 {
		t.Fatalf("body is %d bytes, want 400", len(b))
	}
	var v struct {
		MaxTokens int `json:"max_tokens"`
		Messages  []struct {
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(b, &v); err != nil || v.MaxTokens != 400 || len(v.Messages) != 1 {
		t.Fatalf("body %s: max_tokens %d, %d messages, err %v", b, v.MaxTokens, len(v.Messages), err)
	}
	if _, err := rlBody(20, 400); err == nil {
		t.Fatal("a 20-byte body was accepted; it cannot hold the JSON")
	}
}

func TestRLTallySplitsKindsAndBuckets(t *testing.T) {
	calls := []rlCall{
		{end: 1 * time.Second, took: 100 * time.Millisecond, kind: "ok"},
		{end: 2 * time.Second, took: time.Millisecond, kind: "gw429"},
		{end: 12 * time.Second, took: 2 * time.Millisecond, kind: "up429"},
		{end: 13 * time.Second, took: time.Millisecond, kind: "down503"},
		{end: 19 * time.Second, took: 0, kind: "error"},
		{end: 21 * time.Second, took: 3 * time.Second, kind: "ok"}, // after the end: the last bucket
	}
	seen := []rlFake{{Calls: 5, RateLimited: 1}, {Calls: 9, RateLimited: 4}}
	var res rlResult
	rlTally(&res, calls, []time.Duration{7 * time.Second, 2 * time.Second}, seen, 20*time.Second, 10*time.Second)
	c := res.Counts
	if c.Calls != 6 || c.OK != 2 || c.GatewayRateLimited != 1 || c.Upstream429 != 1 || c.ProviderDown != 1 || c.Errors != 1 {
		t.Fatalf("counts %+v", c)
	}
	b0, b1 := res.Buckets[0], res.Buckets[1]
	if b0.OK != 1 || b0.Gateway429 != 1 || b1.OK != 1 || b1.Upstream429 != 1 || b1.Status503 != 1 || b1.Other != 1 {
		t.Fatalf("buckets %+v", res.Buckets)
	}
	if b0.FakeCalls != 5 || b0.FakeLimited != 1 || b1.FakeCalls != 4 || b1.FakeLimited != 3 || b1.FakeAdmitted != 1 {
		t.Fatalf("fake per bucket %+v", res.Buckets)
	}
	if res.Fake.Calls != 9 || res.CutAtEnd != 2 || res.CutMaxAgeMS != 7000 || res.LatencyOK.N != 2 || res.LatencyAll.N != 5 {
		t.Fatalf("fake %+v, cut %d (oldest %v ms), latency n %d / %d", res.Fake, res.CutAtEnd, res.CutMaxAgeMS, res.LatencyOK.N, res.LatencyAll.N)
	}
}

func TestAttemptLogFindsWaitsRefusalsAndCallsOverTotal(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	line := func(ts time.Time, id string, status int, outcome string, latencyMS, queuedMS float64, refused int) string {
		b, _ := json.Marshal(map[string]any{"ts": ts, "request_id": id, "status": status, "outcome": outcome,
			"latency_ms": latencyMS, "queued_ms": queuedMS, "refused": refused})
		return string(b) + "\n"
	}
	// Call a: queued 50 s, a 429, then 15 s later a second attempt of 1 s:
	// 66 s from its queue's start, over a 60 s total. Call b: 10 s, under.
	logA := line(t0.Add(50*time.Second), "a", 429, "retry", 10, 50000, 0) +
		line(t0.Add(65*time.Second), "a", 200, "ok", 1000, 0, 0) +
		line(t0, "-", 0, "rate_limited", 0, 0, 7)
	logB := line(t0.Add(5*time.Second), "b", 200, "ok", 5000, 0.004, 0)
	pa, pb := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	if err := os.WriteFile(pa, []byte(logA), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pb, []byte(logB), 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := runAttemptLog([]string{"--log", "gw1=" + pa, "--log", "gw2=" + pb, "--total", "60s"})
	if err != nil {
		t.Fatal(err)
	}
	r := v.(*attemptLogResult)
	if r.Lines != 4 || r.Attempts != 3 || r.RateLimited != 7 || r.Calls != 2 || r.OverTotal != 1 {
		t.Fatalf("lines %d, attempts %d, rate limited %d, calls %d, over total %d", r.Lines, r.Attempts, r.RateLimited, r.Calls, r.OverTotal)
	}
	if r.Waited != 1 || r.QueuedWaitedMS.Max != 50000 || r.LongestCallMS != 66000 {
		t.Fatalf("waited %d (max %v ms), longest call %v ms", r.Waited, r.QueuedWaitedMS.Max, r.LongestCallMS)
	}
}
