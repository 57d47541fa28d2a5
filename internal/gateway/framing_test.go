package gateway

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/sse"
)

// steppedStream is an upstream that sends an OpenAI stream in the given
// line framing, one event at a time: after the first, it waits for next
// (at most 5 s) before the usage chunk and the end.
func steppedStream(t *testing.T, eol string, next <-chan struct{}) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		event := func(data string) {
			w.Write([]byte("data: " + data + eol + eol))
			w.(http.Flusher).Flush()
		}
		event(`{"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"hi"}}]}`)
		select {
		case <-next:
		case <-time.After(5 * time.Second):
		case <-r.Context().Done():
			return
		}
		event(`{"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`)
		event(`{"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":5,"total_tokens":6}}`)
		event(`[DONE]`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Under a budget, a stream framed with CRLF or CR passes event by event:
// the client reads the first event before the upstream sends the second,
// and the usage chunk the gateway asked for stays hidden.
func TestBudgetedStreamsPassEventByEventInEveryFraming(t *testing.T) {
	for _, eol := range []string{"\r\n", "\r", "\n"} {
		next := make(chan struct{})
		up := steppedStream(t, eol, next)
		e := newEnv(t, "200", func(c *config.Config) {
			tenCentCalls(10, "all")(c)
			pol := c.Policies["interactive"]
			pol.Timeout.Idle, pol.Timeout.Total = 10*time.Second, 20*time.Second // no stall ends the wait
			c.Policies["interactive"] = pol
			p := c.Providers["openai"]
			p.BaseURL = up.URL
			c.Providers["openai"] = p
		})
		resp := e.do("POST", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"max_tokens":5,"messages":[]}`)
		first := make(chan string, 1)
		var all strings.Builder
		done := make(chan struct{})
		go func() {
			defer close(done)
			var p sse.Parser
			buf := make([]byte, 4096)
			for {
				n, err := resp.Body.Read(buf)
				all.Write(buf[:n])
				p.Feed(buf[:n], func(ev sse.Event) bool {
					select {
					case first <- string(ev.Data):
					default:
					}
					return true
				})
				if err != nil {
					return
				}
			}
		}()
		select {
		case data := <-first:
			if !strings.Contains(data, `"hi"`) {
				t.Errorf("%q framing: first event %q", eol, data)
			}
		case <-time.After(4 * time.Second):
			t.Errorf("%q framing: the first event was held until the upstream sent more", eol)
		}
		close(next)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%q framing: the stream did not end", eol)
		}
		resp.Body.Close()
		got := all.String()
		if strings.Contains(got, `"usage"`) {
			t.Errorf("%q framing: the client, which did not ask for usage, got it: %q", eol, got)
		}
		if !strings.Contains(got, "[DONE]") || !strings.Contains(got, `"finish_reason":"stop"`) {
			t.Errorf("%q framing: events lost: %q", eol, got)
		}
	}
}
