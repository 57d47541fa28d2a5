package dialect

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

const (
	vxGemini    = "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:generateContent"
	vxGeminiSSE = "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.0-flash:streamGenerateContent"
	vxClaude    = "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict"
	vxClaudeSSE = "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict"
	vxGenBody   = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":77}}`
	vxMsgBody   = `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
)

func TestVertexRequest(t *testing.T) {
	for _, tt := range []struct {
		path, body string
		want       Request
	}{
		{vxGemini, vxGenBody, Request{Model: "gemini-2.0-flash", MaxTokens: 77, ModelCall: true}},
		{vxGeminiSSE, vxGenBody, Request{Model: "gemini-2.0-flash", Stream: true, MaxTokens: 77, ModelCall: true}},
		// The body's "stream" means nothing to Gemini: the method says.
		{vxGemini, `{"stream":true}`, Request{Model: "gemini-2.0-flash", ModelCall: true}},
		{"/gw/v1beta1/projects/p/locations/europe-west4/publishers/google/models/gemini-2.5-pro:countTokens", `{}`,
			Request{Model: "gemini-2.5-pro", ModelCall: true}},
		{vxClaude, vxMsgBody, Request{Model: "claude-haiku-4-5@20251001", MaxTokens: 64, ModelCall: true}},
		{vxClaudeSSE, vxMsgBody, Request{Model: "claude-haiku-4-5@20251001", Stream: true, MaxTokens: 64, ModelCall: true}},
		{vxClaude, `{"stream":true,"max_tokens":9}`, Request{Model: "claude-haiku-4-5@20251001", Stream: true, MaxTokens: 9, ModelCall: true}},
		// Not a publisher model path: Anthropic's methods under Google's
		// publisher and the other way round, a region left out, Gemini's own
		// API, Vertex's OpenAI-compatible endpoint (the model in the body).
		{"/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude:generateContent", `{}`, Request{}},
		{"/v1/projects/p1/locations/us-east5/publishers/google/models/gemini:rawPredict", `{}`, Request{}},
		{"/v1/projects/p1/locations//publishers/google/models/gemini:generateContent", `{}`, Request{}},
		{"/v1beta/models/gemini-2.0-flash:generateContent", `{}`, Request{}},
		{"/v1/projects/p1/locations/us-central1/endpoints/openapi/chat/completions", `{"model":"google/gemini-2.0-flash","max_tokens":5}`,
			Request{Model: "google/gemini-2.0-flash", MaxTokens: 5, ModelCall: true}},
	} {
		got := Vertex.Request(tt.path, []byte(tt.body))
		got.Operation = "" // TestOperation's
		if got != tt.want {
			t.Errorf("Request(%s, %s) = %+v; want %+v", tt.path, tt.body, got, tt.want)
		}
	}
	bad := Vertex.Request("/v1/projects/p/locations/r/publishers/google/models/gem\x01ini:generateContent", nil)
	if bad.Model != "" || bad.BadModel == nil || !bad.ModelCall {
		t.Errorf("a model that is no name: %+v", bad)
	}
}

func TestVertexRetarget(t *testing.T) {
	body := []byte(vxMsgBody)
	p, b, ok := Vertex.Retarget(vxClaudeSSE, body, "claude-sonnet-4-5@20250929")
	if want := "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:streamRawPredict"; !ok || p != want || !bytes.Equal(b, body) {
		t.Errorf("Retarget = %s, %s, %v; want %s and the body as it was", p, b, ok, want)
	}
	p, _, ok = Vertex.Retarget(vxGemini, []byte(vxGenBody), "gemini-2.5-flash")
	if want := "/v1/projects/p1/locations/us-central1/publishers/google/models/gemini-2.5-flash:generateContent"; !ok || p != want {
		t.Errorf("Retarget = %s, %v; want %s", p, ok, want)
	}
	p, b, ok = Vertex.Retarget("/v1/projects/p1/locations/l/endpoints/openapi/chat/completions", []byte(`{"model":"a"}`), "b")
	if !ok || p != "/v1/projects/p1/locations/l/endpoints/openapi/chat/completions" || string(b) != `{"model":"b"}` {
		t.Errorf("OpenAI-compatible endpoint: %s %s %v; want the body's model", p, b, ok)
	}
}

// TestVertexPaths: Vertex's paths are Vertex's, found before Gemini's
// (whose own test of a path would take them), and Gemini's stay Gemini's.
func TestVertexPaths(t *testing.T) {
	for p, want := range map[string]Dialect{
		vxGemini: Vertex, vxClaudeSSE: Vertex, "/v1beta/models/gemini-2.0-flash:generateContent": Gemini,
		"/v1/chat/completions": OpenAI,
	} {
		if got := ForPath(p); got != want {
			t.Errorf("ForPath(%s) = %s; want %s", p, got.Kind(), want.Kind())
		}
	}
	if d, ok := Lookup("vertex"); !ok || d != Vertex {
		t.Errorf("Lookup(vertex) = %v, %v", d, ok)
	}
	if tr := Vertex.Traits(); tr != (Traits{System: "gcp.vertex_ai", StrictEnd: true, Signs: true}) {
		t.Errorf("Traits = %+v", tr)
	}
}

func TestVertexJudge(t *testing.T) {
	for _, tt := range []struct {
		status int
		body   []byte
		want   Judgment
	}{
		{429, googleError(perDay + "," + retryInfo("40s")), Judgment{Quota: true, Wait: 40e9, HasWait: true}},
		{429, googleError(perMinute + "," + retryInfo("13s")), Judgment{Wait: 13e9, HasWait: true}},
		{503, []byte(`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`), Judgment{}},
	} {
		if got := Vertex.Judge(tt.status, nil, tt.body); got != tt.want {
			t.Errorf("Judge(%d, %s) = %+v; want %+v", tt.status, tt.body, got, tt.want)
		}
	}
	// Anthropic's errors are Anthropic's to judge.
	for _, b := range []string{
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"type":"error","error":{"type":"rate_limit_error","message":"type.googleapis.com/google.rpc.QuotaFailure PerDay"}}`,
	} {
		if !anthropicShaped([]byte(b)) {
			t.Errorf("%s not taken for Anthropic's", b)
		}
		if got, want := Vertex.Judge(429, nil, []byte(b)), Anthropic.Judge(429, nil, []byte(b)); got != want {
			t.Errorf("Judge(%s) = %+v; want Anthropic's %+v", b, got, want)
		}
	}
	if anthropicShaped(googleError(perDay)) || anthropicShaped([]byte(`{"error":{"type":"error"}}`)) {
		t.Error("a Google error taken for Anthropic's")
	}
}

// event is one event of a stream, as a test sees it.
type event struct {
	end    bool
	status int
}

// feedBytewise feeds s to Vertex's stream reader one byte at a time and returns
// its events.
func feedBytewise(t *testing.T, s string) []event {
	t.Helper()
	st := Vertex.Stream(http.Header{"Content-Type": {"text/event-stream"}})
	var evs []event
	for i := range len(s) {
		st.Feed([]byte{s[i]}, func(ev Event) bool {
			evs = append(evs, event{ev.End, ev.Status})
			return true
		})
	}
	return evs
}

func TestVertexStream(t *testing.T) {
	const (
		chunk    = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Hi\"}]}}]}\r\n\r\n"
		last     = "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\".\"}]},\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"candidatesTokenCount\":2}}\n\n"
		start    = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"
		delta    = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"text\":\"Hi\"}}\n\n"
		stop     = "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
		gUnavail = "data: {\"error\":{\"code\":503,\"message\":\"overloaded\",\"status\":\"UNAVAILABLE\"}}\n\n"
		gStatus  = "data: {\"error\":{\"message\":\"slow down\",\"status\":\"RESOURCE_EXHAUSTED\"}}\n\n"
		aOver    = "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n"
	)
	for _, tt := range []struct {
		name, stream string
		want         []event
	}{
		{"gemini", chunk + chunk + last, []event{{}, {}, {end: true}}},
		{"gemini cut", chunk + chunk, []event{{}, {}}},
		{"anthropic", start + delta + stop, []event{{}, {}, {end: true}}},
		{"anthropic cut", start + delta, []event{{}, {}}},
		{"google error", gUnavail + gStatus, []event{{status: 503}, {status: 429}}},
		{"anthropic error", start + aOver, []event{{}, {status: 529}}},
	} {
		got := feedBytewise(t, tt.stream)
		if len(got) != len(tt.want) {
			t.Errorf("%s: events %+v; want %+v", tt.name, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%s: events %+v; want %+v", tt.name, got, tt.want)
				break
			}
		}
	}
	if Vertex.Stream(http.Header{"Content-Type": {"application/json"}}) != nil {
		t.Error("a JSON answer read as a stream")
	}
}

// TestUsagePick: a stream's usage is read by Anthropic's reader when its
// first line names an event, else by Gemini's; the pick waits for a whole
// line, at most maxUsagePick bytes.
func TestUsagePick(t *testing.T) {
	for _, tt := range []struct {
		head   string
		picked bool
		want   Dialect
	}{
		{"event: message_start\ndata: {}", true, Anthropic},
		{": ping\r\n\r\nevent: message_start\r\n", true, Anthropic},
		{"data: {\"candidates\":[]}\n", true, Gemini},
		{"event: message_st", false, nil},
		{"data: " + strings.Repeat("x", maxUsagePick), true, Gemini},
	} {
		u := &vertexUsage{}
		u.Write([]byte(tt.head))
		if u.picked != tt.picked || u.from != tt.want {
			t.Errorf("%.30q: picked %v from %v; want %v from %v", tt.head, u.picked, u.from, tt.picked, tt.want)
		}
	}
}

func TestFirstLine(t *testing.T) {
	for _, tt := range []struct {
		in, line string
		whole    bool
	}{
		{"event: message_start\ndata: {}", "event: message_start", true},
		{"\r\n: keep-alive\r\n\ndata: {\"candidates\"", `data: {"candidates"`, false},
		{": ping\n\ndata: {}\r\n", "data: {}", true},
		{"", "", false},
		{"\n\n", "", false},
	} {
		line, whole := firstLine([]byte(tt.in))
		if string(line) != tt.line || whole != tt.whole {
			t.Errorf("firstLine(%q) = %q, %v; want %q, %v", tt.in, line, whole, tt.line, tt.whole)
		}
	}
}

// TestVertexUsage: an answer's usage, and a stream's fed a few bytes at
// a time, are read as the publisher's own reader reads them.
func TestVertexUsage(t *testing.T) {
	gemini := `{"candidates":[{"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":5,"cachedContentTokenCount":2}}`
	claude := `{"type":"message","content":[{"type":"text","text":"say \"usageMetadata\""}],"usage":{"input_tokens":7,"output_tokens":5,"cache_read_input_tokens":3}}`
	if _, ok := Gemini.Usage([]byte(gemini)); !ok {
		t.Fatal("Gemini.Usage reads no usage from a Gemini answer")
	}
	for name, tt := range map[string]struct {
		body string
		d    Dialect
	}{"gemini": {gemini, Gemini}, "anthropic": {claude, Anthropic}} {
		got, ok := Vertex.Usage([]byte(tt.body))
		want, wok := tt.d.Usage([]byte(tt.body))
		if got != want || ok != wok || !ok || got.Output != 5 {
			t.Errorf("%s: Usage = %+v, %v; want %+v, %v", name, got, ok, want, wok)
		}
	}
	streams := map[string]struct {
		body string
		d    Dialect
	}{
		"gemini": {": hi\n\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\"}]}}],\"usageMetadata\":{\"promptTokenCount\":7,\"candidatesTokenCount\":1}}\n\n" +
			"data: {\"candidates\":[{\"finishReason\":\"STOP\"}],\"usageMetadata\":{\"promptTokenCount\":7,\"candidatesTokenCount\":5}}\n\n", Gemini},
		"anthropic": {"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":5}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", Anthropic},
	}
	for name, tt := range streams {
		r, want := Vertex.StreamUsage(), tt.d.StreamUsage()
		want.Write([]byte(tt.body))
		for b := []byte(tt.body); len(b) > 0; b = b[min(3, len(b)):] {
			r.Write(b[:min(3, len(b))])
		}
		got, ok := r.Usage()
		w, wok := want.Usage()
		if got != w || ok != wok || !ok || got.Output != 5 || r.Events() != want.Events() {
			t.Errorf("%s: stream usage %+v, %v, %d events; want %+v, %v, %d", name, got, ok, r.Events(), w, wok, want.Events())
		}
	}
}

func TestVertexClient(t *testing.T) {
	c := Vertex.Client()
	for h, want := range map[string]string{"Bearer ya29.abc": "ya29.abc", "bearer  ya29.x ": "ya29.x", "Basic abc": "", "": "", "Bearer ": ""} {
		r, _ := http.NewRequest("POST", "http://gw"+vxGemini, nil)
		if h != "" {
			r.Header.Set("Authorization", h)
		}
		if got := c.Key(r); got != want {
			t.Errorf("Key(%q) = %q; want %q", h, got, want)
		}
	}
	r, _ := http.NewRequest("POST", "http://gw"+vxGeminiSSE+"?alt=sse&key=AIza-1&k=v&%6Bey=AIza-2", nil)
	for _, h := range []string{"Authorization", "X-Api-Key", "X-Goog-Api-Key", "Api-Key"} {
		r.Header.Set(h, "secret")
	}
	c.SetKey(r, "")
	if len(r.Header) != 0 || r.URL.RawQuery != "alt=sse&k=v" {
		t.Errorf("SetKey left %v ?%s; want no credential, alt=sse&k=v", r.Header, r.URL.RawQuery)
	}
	c.SetKey(r, "ya29.gw")
	if r.Header.Get("Authorization") != "Bearer ya29.gw" {
		t.Errorf("SetKey set %v", r.Header)
	}
	if c.AsksUsage(r) {
		t.Error("AsksUsage: Vertex's streams take no stream_options")
	}
	h := http.Header{}
	b := c.Error(h, 503, "provider_down", "down")
	want := Gemini.Client().Error(http.Header{}, 503, "provider_down", "down")
	if want == nil {
		t.Fatal("Gemini.Client makes no error body")
	}
	if !bytes.Equal(b, want) || !bytes.Contains(b, []byte(`"UNAVAILABLE"`)) {
		t.Errorf("Error = %s; want Gemini's %s", b, want)
	}
	if ev := c.ErrorEvent("stream_cut", "cut"); !bytes.Equal(ev, Gemini.Client().ErrorEvent("stream_cut", "cut")) ||
		!bytes.HasPrefix(ev, []byte("data:")) {
		t.Errorf("ErrorEvent = %s; want Gemini's", ev)
	}
}
