package dialect

import (
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	"github.com/sluice-llm/sluice/internal/sse"
)

// A message that needs escaping in every shape.
const hardMessage = "quote \" and <tag> and \n newline"

// oaiShape, anthropicShape and googleShape are the three shapes of the
// gateway's own errors, as a client decodes them.
type oaiShape struct {
	Error struct {
		Message, Type, Code string
		Param               *string
	}
}

type anthropicShape struct {
	Type  string
	Error struct{ Type, Message string }
}

type googleShape struct {
	Error struct {
		Code    int
		Message string
		Status  string
		Details []struct {
			Type   string `json:"@type"`
			Reason string
			Domain string
		}
	}
}

// checkShape decodes body in the shape of d's errors and checks that it
// says status, code and message.
func checkShape(t *testing.T, d Dialect, body []byte, status int, code, message string) {
	t.Helper()
	switch d.Kind() {
	case "openai", "azure":
		var v oaiShape
		if err := json.Unmarshal(body, &v); err != nil || v.Error.Message != message ||
			v.Error.Type != code || v.Error.Code != code || v.Error.Param != nil {
			t.Errorf("%s: OpenAI shape: %s (%v)", d.Kind(), body, err)
		}
	case "anthropic":
		var v anthropicShape
		if err := json.Unmarshal(body, &v); err != nil || v.Type != "error" || v.Error.Type != code || v.Error.Message != message {
			t.Errorf("%s: Anthropic shape: %s (%v)", d.Kind(), body, err)
		}
	case "bedrock":
		var v struct{ Message, Reason string }
		if err := json.Unmarshal(body, &v); err != nil || v.Message != message || v.Reason != code {
			t.Errorf("%s: Bedrock shape: %s (%v)", d.Kind(), body, err)
		}
	case "gemini", "vertex":
		var v googleShape
		if err := json.Unmarshal(body, &v); err != nil || v.Error.Code != status || v.Error.Message != message ||
			len(v.Error.Details) != 1 || v.Error.Details[0].Reason != code || v.Error.Details[0].Domain != "sluice" ||
			v.Error.Details[0].Type != "type.googleapis.com/google.rpc.ErrorInfo" {
			t.Errorf("%s: Google shape: %s (%v)", d.Kind(), body, err)
		}
	default:
		t.Fatalf("no shape known for %s", d.Kind())
	}
}

func TestClientError(t *testing.T) {
	for _, d := range all {
		for _, tt := range []struct {
			status int
			code   string
		}{{503, "provider_down"}, {504, "timeout"}, {400, "invalid_request"}, {429, "budget_exhausted"}} {
			h := http.Header{}
			body := d.Client().Error(h, tt.status, tt.code, hardMessage)
			if ct := h.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s: Content-Type %q, want application/json", d.Kind(), ct)
			}
			checkShape(t, d, body, tt.status, tt.code, hardMessage)
		}
	}
}

func TestGoogleErrorStatus(t *testing.T) {
	for _, tt := range []struct {
		status int
		want   string
	}{
		{400, "INVALID_ARGUMENT"}, {401, "UNAUTHENTICATED"}, {404, "NOT_FOUND"}, {413, "INVALID_ARGUMENT"},
		{422, "INVALID_ARGUMENT"}, {429, "RESOURCE_EXHAUSTED"}, {502, "UNAVAILABLE"}, {503, "UNAVAILABLE"},
		{504, "DEADLINE_EXCEEDED"}, {500, "INTERNAL"},
	} {
		var v googleShape
		if err := json.Unmarshal(Gemini.Client().Error(nil, tt.status, "x", "m"), &v); err != nil || v.Error.Status != tt.want {
			t.Errorf("status %d: %q (%v), want %s", tt.status, v.Error.Status, err, tt.want)
		}
	}
}

func TestClientErrorEvent(t *testing.T) {
	for _, tt := range []struct {
		d          Dialect
		code       string
		wantType   string
		wantStatus int // Google's events carry one
	}{
		{OpenAI, "stream_cut", "", 0},
		{Azure, "stream_stalled", "", 0},
		{Anthropic, "stream_cut", "error", 0},
		{Gemini, "stream_cut", "", 503},
		{Gemini, "shutting_down", "", 503},
		{Gemini, "stream_stalled", "", 504},
		{Gemini, "timeout", "", 504},
	} {
		var p sse.Parser
		var evs []sse.Event
		p.Feed(tt.d.Client().ErrorEvent(tt.code, hardMessage), func(ev sse.Event) bool {
			ev.Data = append([]byte(nil), ev.Data...)
			evs = append(evs, ev)
			return true
		})
		if len(evs) != 1 || p.Pending() {
			t.Errorf("%s %s: %d events, pending %v; want one whole event", tt.d.Kind(), tt.code, len(evs), p.Pending())
			continue
		}
		if evs[0].Type != tt.wantType {
			t.Errorf("%s %s: event type %q, want %q", tt.d.Kind(), tt.code, evs[0].Type, tt.wantType)
		}
		checkShape(t, tt.d, evs[0].Data, tt.wantStatus, tt.code, hardMessage)
		// The dialect's own stream reader takes it for an error.
		s := tt.d.Stream(http.Header{"Content-Type": {"text/event-stream"}})
		status := 0
		s.Feed(tt.d.Client().ErrorEvent(tt.code, "m"), func(ev Event) bool { status = ev.Status; return true })
		if status < 400 {
			t.Errorf("%s %s: the dialect's stream reads status %d from the event, want an error", tt.d.Kind(), tt.code, status)
		}
	}
}

// clientRequest returns a request to target with the headers given as name,
// value pairs.
func clientRequest(target string, kv ...string) *http.Request {
	r, _ := http.NewRequest("POST", "http://gw"+target, nil)
	for i := 0; i+1 < len(kv); i += 2 {
		r.Header.Set(kv[i], kv[i+1])
	}
	return r
}

func TestClientKey(t *testing.T) {
	for _, tt := range []struct {
		d    Dialect
		r    *http.Request
		want string
	}{
		{OpenAI, clientRequest("/v1/chat/completions", "Authorization", "Bearer sk-1"), "sk-1"},
		{OpenAI, clientRequest("/v1/chat/completions", "Authorization", "Basic abc"), ""},
		{OpenAI, clientRequest("/v1/chat/completions", "X-Api-Key", "sk-2"), "sk-2"}, // another SDK's header
		{OpenAI, clientRequest("/v1/chat/completions?key=q"), ""},
		{Anthropic, clientRequest("/v1/messages", "X-Api-Key", "sk-ant"), "sk-ant"},
		{Anthropic, clientRequest("/v1/messages", "Authorization", "Bearer tok", "X-Api-Key", "sk-ant"), "sk-ant"}, // its own first
		{Azure, clientRequest("/openai/deployments/d/chat/completions", "Api-Key", "az"), "az"},
		{Azure, clientRequest("/openai/v1/chat/completions", "Authorization", "Bearer entra"), "entra"},
		{Gemini, clientRequest("/v1beta/models/m:generateContent", "X-Goog-Api-Key", "g"), "g"},
		{Gemini, clientRequest("/v1beta/models/m:generateContent?key=q&alt=sse"), "q"},
		{Gemini, clientRequest("/v1beta/models/m:generateContent?key=q", "X-Goog-Api-Key", "g"), "g"},
		{Gemini, clientRequest("/v1beta/models/m:generateContent?k%65y=q"), "q"},
		{Gemini, clientRequest("/v1beta/models/m:generateContent"), ""},
	} {
		if got := tt.d.Client().Key(tt.r); got != tt.want {
			t.Errorf("%s %s %v: Key = %q, want %q", tt.d.Kind(), tt.r.URL, tt.r.Header, got, tt.want)
		}
	}
}

func TestClientSetKey(t *testing.T) {
	for _, tt := range []struct {
		d            Dialect
		header, want string
	}{
		{OpenAI, "Authorization", "Bearer pk"},
		{Azure, "Api-Key", "pk"},
		{Anthropic, "X-Api-Key", "pk"},
		{Gemini, "X-Goog-Api-Key", "pk"},
	} {
		for _, key := range []string{"pk", ""} {
			r := clientRequest("/v1/x?alt=sse&key=client&api-version=2024-10-21",
				"Authorization", "Bearer client", "X-Api-Key", "client", "Api-Key", "client", "X-Goog-Api-Key", "client",
				"Anthropic-Version", "2023-06-01")
			tt.d.Client().SetKey(r, key)
			for _, h := range KeyHeaders() {
				got, want := r.Header.Get(h), ""
				if key != "" && h == tt.header {
					want = tt.want
				}
				if got != want {
					t.Errorf("%s SetKey(%q): %s = %q, want %q", tt.d.Kind(), key, h, got, want)
				}
			}
			if q := r.URL.Query(); q.Has("key") || q.Get("alt") != "sse" || q.Get("api-version") != "2024-10-21" {
				t.Errorf("%s SetKey(%q): query %q, want the key dropped and the rest kept", tt.d.Kind(), key, r.URL.RawQuery)
			}
			if r.Header.Get("Anthropic-Version") != "2023-06-01" {
				t.Errorf("%s SetKey(%q) dropped a header that is no credential", tt.d.Kind(), key)
			}
		}
		// A header alone, as a key pool sets it on each attempt.
		h := http.Header{"Authorization": {"Bearer client"}, "X-Goog-Api-Key": {"client"}}
		tt.d.Client().SetKey(&http.Request{Header: h}, "pk")
		if len(h) != 1 || h.Get(tt.header) != tt.want {
			t.Errorf("%s SetKey on a header alone: %v", tt.d.Kind(), h)
		}
	}
}

// TestSetKeyDropsQueryCredentials checks that no dialect's SetKey lets a
// client's credential in the query through (?key=, ?access_token=, a
// presigned URL's X-Amz-*), keeping every other parameter as it came and
// the client's URL as it was.
func TestSetKeyDropsQueryCredentials(t *testing.T) {
	const in = "alt=sse&key=AIza-client&access_token=ya29.CLIENT-OWN-TOKEN&Token=t&k%65y=b&X-Amz-Signature=abc&x-amz-credential=AKID%2Fx&api-version=2024-10-21&monkey=1"
	const want = "alt=sse&api-version=2024-10-21&monkey=1"
	for _, d := range all {
		u := &url.URL{Scheme: "https", Host: "up.example", Path: "/p", RawQuery: in}
		r := &http.Request{URL: u, Header: http.Header{"X-Amz-Security-Token": {"client-session"}}}
		d.Client().SetKey(r, "pk")
		if r.URL.RawQuery != want {
			t.Errorf("%s: SetKey left the query %q, want %q", d.Kind(), r.URL.RawQuery, want)
		}
		if u.RawQuery != in {
			t.Errorf("%s: SetKey changed the client's URL: %q", d.Kind(), u.RawQuery)
		}
		if v := r.Header.Get("X-Amz-Security-Token"); v != "" {
			t.Errorf("%s: SetKey left X-Amz-Security-Token %q", d.Kind(), v)
		}
	}
}

func TestAsksUsage(t *testing.T) {
	for _, tt := range []struct {
		d       Dialect
		version string
		ok      bool
	}{
		{OpenAI, "", true},
		{Anthropic, "", false},
		{Gemini, "", false},
		{Azure, "", true},
		{Azure, "preview", true},
		{Azure, "latest", true},
		{Azure, "2024-10-21", true},
		{Azure, "2024-07-01-preview", true},
		{Azure, "2024-06-01", false},
		{Azure, "2024-02-15-preview", false},
		{Azure, "junk", false},
	} {
		target := "/chat/completions"
		if tt.version != "" {
			target += "?api-version=" + tt.version
		}
		if got := tt.d.Client().AsksUsage(clientRequest(target)); got != tt.ok {
			t.Errorf("%s AsksUsage(api-version=%q) = %v, want %v", tt.d.Kind(), tt.version, got, tt.ok)
		}
	}
	for _, d := range []Dialect{OpenAI, Azure} { // only a chat completion takes stream_options
		if d.Client().AsksUsage(clientRequest("/v1/responses")) {
			t.Errorf("%s asks for a stream's usage in a Responses API call", d.Kind())
		}
	}
}
