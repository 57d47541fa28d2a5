package gateway

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

// otlpReceiver is an OTLP/HTTP traces endpoint that keeps what it gets:
// the spans decoded, and the raw exports to search for secrets.
type otlpReceiver struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	raw   []byte
	names []string // the resources' service.name
}

// newOTLPReceiver returns a receiver listening but not serving yet: start
// it once the gateway is made, so that it closes before the test checks
// for leaked goroutines.
func newOTLPReceiver(t *testing.T) *otlpReceiver {
	r := &otlpReceiver{}
	r.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		b, err := io.ReadAll(body)
		var in coltracepb.ExportTraceServiceRequest
		if err == nil && req.URL.Path == "/v1/traces" {
			err = proto.Unmarshal(b, &in)
		}
		if err != nil || req.URL.Path != "/v1/traces" {
			t.Errorf("OTLP receiver: %s: %v", req.URL.Path, err)
			http.Error(w, "bad export", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		r.raw = append(r.raw, b...)
		for _, rs := range in.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					r.names = append(r.names, kv.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				r.spans = append(r.spans, ss.Spans...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(out)
	}))
	return r
}

// await flushes the gateway's spans until n have arrived (the call's span
// ends as its handler returns, which may be after the client has read the
// answer), within five seconds.
func (r *otlpReceiver) await(t *testing.T, gw *Gateway, n int) []*tracepb.Span {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := gw.tracing.ForceFlush(ctx)
		cancel()
		r.mu.Lock()
		got := append([]*tracepb.Span(nil), r.spans...)
		r.mu.Unlock()
		if len(got) >= n || time.Now().After(deadline) {
			if len(got) != n {
				t.Fatalf("got %d spans, want %d (flush: %v)", len(got), n, err)
			}
			return got
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// attrs returns a span's attributes as Go values.
func attrs(s *tracepb.Span) map[string]any {
	m := map[string]any{}
	for _, kv := range s.Attributes {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = v.DoubleValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		default:
			m[kv.Key] = v
		}
	}
	return m
}

const tracedPrompt = "the-prompt-text-7f3a"

// tracedEnv is a gateway with tracing on, exporting to a receiver; the
// openai provider injects its own key.
func tracedEnv(t *testing.T, script string) (*env, *otlpReceiver) {
	rcv := newOTLPReceiver(t)
	e := newEnv(t, script, func(c *config.Config) {
		c.Tracing = config.Tracing{Enabled: true, Endpoint: "http://" + rcv.Listener.Addr().String() + "/v1/traces", SampleRatio: 1, ServiceName: "edge"}
		p := c.Providers["openai"]
		p.APIKeyEnv = "UPSTREAM_KEY"
		c.Providers["openai"] = p
	})
	rcv.Start()
	t.Cleanup(rcv.Close)
	return e, rcv
}

// splitSpans returns the call's span and its attempts' spans, in order.
func splitSpans(t *testing.T, spans []*tracepb.Span) (*tracepb.Span, []*tracepb.Span) {
	t.Helper()
	var call *tracepb.Span
	var tries []*tracepb.Span
	for _, s := range spans {
		switch s.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			call = s
		case tracepb.Span_SPAN_KIND_CLIENT:
			tries = append(tries, s)
		}
	}
	if call == nil {
		t.Fatal("no call span")
	}
	for i := 1; i < len(tries); i++ { // by sluice.attempt
		for j := i; j > 0 && attrs(tries[j])["sluice.attempt"].(int64) < attrs(tries[j-1])["sluice.attempt"].(int64); j-- {
			tries[j], tries[j-1] = tries[j-1], tries[j]
		}
	}
	return call, tries
}

// parentOf returns the trace id and the parent span id of a traceparent.
func parentOf(tp string) (trace, span string) {
	p := strings.Split(tp, "-")
	if len(p) != 4 {
		return "", ""
	}
	return p[1], p[2]
}

// A call that failed twice then succeeded is one call span with three
// attempt spans under it, carrying the GenAI and Sluice attributes and no
// key, prompt or body; each attempt sends its own span upstream.
func TestTracingCallWithRetries(t *testing.T) {
	e, rcv := tracedEnv(t, "503,503,200")
	prompt := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"` + tracedPrompt + `"}]}`
	resp := e.do("POST", "/openai/v1/chat/completions", prompt)
	answer := body(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, answer)
	}
	call, tries := splitSpans(t, rcv.await(t, e.gw, 4))
	if len(tries) != 3 {
		t.Fatalf("%d attempt spans, want 3", len(tries))
	}
	ca := attrs(call)
	id := resp.Header.Get("Sluice-Request-Id")
	for k, want := range map[string]any{
		"gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-4o-mini", "sluice.request_id": id,
		"http.response.status_code": int64(200), "sluice.attempts": int64(3), "http.request.method": "POST",
	} {
		if ca[k] != want {
			t.Errorf("call span %s = %v, want %v", k, ca[k], want)
		}
	}
	// The fake counts a body's bytes / 4 as its prompt tokens.
	if in, out := ca["gen_ai.usage.input_tokens"], ca["gen_ai.usage.output_tokens"]; in != int64(len(prompt)/4) || out == nil || out.(int64) <= 0 {
		t.Errorf("call span usage in %v out %v; want in %d, out > 0", in, out, len(prompt)/4)
	}
	if call.Name != "POST /openai" || len(call.ParentSpanId) != 0 {
		t.Errorf("call span %q, parent %x; want POST /openai, a root", call.Name, call.ParentSpanId)
	}
	ups := e.up.Requests()
	if len(ups) != 3 {
		t.Fatalf("upstream got %d requests, want 3", len(ups))
	}
	wantOutcome := []string{"retry", "retry", "ok"}
	wantStatus := []int64{503, 503, 200}
	for i, s := range tries {
		a := attrs(s)
		if !bytes.Equal(s.TraceId, call.TraceId) || !bytes.Equal(s.ParentSpanId, call.SpanId) {
			t.Errorf("attempt %d: trace %x parent %x, want %x under %x", i+1, s.TraceId, s.ParentSpanId, call.TraceId, call.SpanId)
		}
		for k, want := range map[string]any{
			"sluice.attempt": int64(i + 1), "sluice.outcome": wantOutcome[i], "http.response.status_code": wantStatus[i],
			"gen_ai.provider.name": "openai", "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o-mini",
			"sluice.breaker.state": "closed", "sluice.request_id": id,
		} {
			if a[k] != want {
				t.Errorf("attempt %d: %s = %v, want %v", i+1, k, a[k], want)
			}
		}
		if q, ok := a["sluice.queued_ms"].(float64); !ok || q < 0 || q > 1000 {
			t.Errorf("attempt %d: sluice.queued_ms %v", i+1, a["sluice.queued_ms"])
		}
		if w, _ := a["sluice.retry.wait_ms"].(float64); (i < 2) != (w > 0) {
			t.Errorf("attempt %d: sluice.retry.wait_ms %v", i+1, a["sluice.retry.wait_ms"])
		}
		if s.Name != "chat gpt-4o-mini" {
			t.Errorf("attempt %d named %q", i+1, s.Name)
		}
		tid, sid := parentOf(ups[i].Header.Get("Traceparent"))
		if tid != hex.EncodeToString(call.TraceId) || sid != hex.EncodeToString(s.SpanId) {
			t.Errorf("upstream request %d: traceparent %q, want trace %x span %x", i+1, ups[i].Header.Get("Traceparent"), call.TraceId, s.SpanId)
		}
	}
	rcv.mu.Lock()
	raw, names := string(rcv.raw), rcv.names
	rcv.mu.Unlock()
	for _, secret := range []string{clientKey, "sk-injected-1234", tracedPrompt, "Bearer", `"messages"`, "fake answer"} {
		if strings.Contains(raw, secret) {
			t.Errorf("the exported spans hold %q", secret)
		}
	}
	if len(names) == 0 || names[0] != "edge" {
		t.Errorf("service.name %v, want edge", names)
	}
}

// A call with a traceparent continues the caller's trace, and the
// provider sees the caller's trace id.
func TestTracingContinuesCallersTrace(t *testing.T) {
	e, rcv := tracedEnv(t, "503,503,200")
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Traceparent", "00-"+traceID+"-"+spanID+"-01")
	if body(t, resp); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	call, tries := splitSpans(t, rcv.await(t, e.gw, 4))
	if hex.EncodeToString(call.TraceId) != traceID || hex.EncodeToString(call.ParentSpanId) != spanID {
		t.Errorf("call span trace %x parent %x, want %s under %s", call.TraceId, call.ParentSpanId, traceID, spanID)
	}
	if len(tries) != 3 {
		t.Fatalf("%d attempt spans, want 3", len(tries))
	}
	for i, up := range e.up.Requests() {
		tid, sid := parentOf(up.Header.Get("Traceparent"))
		if tid != traceID || sid == spanID || sid != hex.EncodeToString(tries[i].SpanId) {
			t.Errorf("upstream request %d: traceparent %q, want trace %s and the attempt's span", i+1, up.Header.Get("Traceparent"), traceID)
		}
	}
}

// Tracing is off by default: no tracer, and a caller's traceparent goes
// upstream as it came.
func TestTracingOffByDefault(t *testing.T) {
	e := newEnv(t, "503,200", nil)
	if e.gw.tracing != nil {
		t.Fatal("tracing on without tracing.enabled")
	}
	tp := "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Traceparent", tp)
	if body(t, resp); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	ups := e.up.Requests()
	if len(ups) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(ups))
	}
	for i, up := range ups {
		if got := up.Header.Get("Traceparent"); got != tp {
			t.Errorf("upstream request %d: traceparent %q, want the caller's %q", i+1, got, tp)
		}
	}
}

// A streamed answer's usage, read as it is relayed, is the call span's.
func TestTracingStreamUsage(t *testing.T) {
	e, rcv := tracedEnv(t, "200")
	resp := e.do("POST", "/anthropic/v1/messages", msgStream, "Anthropic-Version", "2023-06-01")
	if b := body(t, resp); resp.StatusCode != 200 || !strings.Contains(b, "message_stop") {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	call, tries := splitSpans(t, rcv.await(t, e.gw, 2))
	ca, ta := attrs(call), attrs(tries[0])
	if in, out := ca["gen_ai.usage.input_tokens"], ca["gen_ai.usage.output_tokens"]; in != int64(len(msgStream)/4) || out == nil || out.(int64) <= 0 {
		t.Errorf("call span usage in %v out %v; want in %d, out > 0", in, out, len(msgStream)/4)
	}
	if ca["gen_ai.provider.name"] != "anthropic" || ta["gen_ai.provider.name"] != "anthropic" || ta["sluice.stream"] != true || ta["sluice.outcome"] != "ok" {
		t.Errorf("call %v, attempt %v", ca, ta)
	}
}

// Enabled without an endpoint, tracing exports where the standard
// OTEL_EXPORTER_OTLP_ENDPOINT says, as service sluice.
func TestTracingEndpointFromEnvironment(t *testing.T) {
	rcv := newOTLPReceiver(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+rcv.Listener.Addr().String())
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	e := newEnv(t, "200", func(c *config.Config) { c.Tracing.Enabled = true })
	rcv.Start()
	t.Cleanup(rcv.Close)
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	if body(t, resp); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	rcv.await(t, e.gw, 2)
	rcv.mu.Lock()
	defer rcv.mu.Unlock()
	if len(rcv.names) == 0 || rcv.names[0] != "sluice" {
		t.Errorf("service.name %v, want the default sluice", rcv.names)
	}
}

// With sample_ratio 0 no span is recorded, yet each attempt still sends a
// traceparent upstream, flagged not sampled.
func TestTracingSampledOut(t *testing.T) {
	rcv := newOTLPReceiver(t)
	e := newEnv(t, "503,200", func(c *config.Config) {
		c.Tracing = config.Tracing{Enabled: true, Endpoint: "http://" + rcv.Listener.Addr().String() + "/v1/traces", SampleRatio: 0}
	})
	rcv.Start()
	t.Cleanup(rcv.Close)
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	if body(t, resp); resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.gw.tracing.ForceFlush(ctx); err != nil {
		t.Fatal(err)
	}
	rcv.mu.Lock()
	n := len(rcv.spans)
	rcv.mu.Unlock()
	if n != 0 {
		t.Errorf("%d spans exported at sample_ratio 0", n)
	}
	ups := e.up.Requests()
	if len(ups) != 2 {
		t.Fatalf("upstream got %d requests, want 2", len(ups))
	}
	for i, up := range ups {
		if tp := up.Header.Get("Traceparent"); len(tp) != 55 || !strings.HasSuffix(tp, "-00") {
			t.Errorf("upstream request %d: traceparent %q, want one flagged not sampled", i+1, tp)
		}
	}
}

// BenchmarkForwardTraced is one chat call through the gateway, tracing off
// and on (every call sampled, exported to a loopback receiver that
// discards): what a traced call costs.
func BenchmarkForwardTraced(b *testing.B) {
	srv := fake.NewServer("200")
	defer srv.Close()
	srv.Provider.MaxRequests = 100
	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer sink.Close()
	for _, on := range []bool{false, true} {
		name := "off"
		if on {
			name = "on"
		}
		b.Run(name, func(b *testing.B) {
			cfg := config.Default()
			cfg.State.Backend = config.BackendMemory
			cfg.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: srv.URL, MaxConcurrent: 64}
			cfg.Tracing = config.Tracing{Enabled: on, Endpoint: sink.URL + "/v1/traces", SampleRatio: 1}
			gw, err := New(cfg, Options{AttemptLog: io.Discard})
			if err != nil {
				b.Fatal(err)
			}
			defer gw.Close()
			forwardLoop(b, gw, chatBody)
		})
	}
}
