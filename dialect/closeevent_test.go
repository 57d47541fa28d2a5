package dialect

import (
	"net/http"
	"testing"
)

// TestCloseEvent: a server-sent event cut mid-way is closed by a blank
// line, and nothing is when no event is begun; a Bedrock frame cut
// mid-way cannot be closed, so nothing ever is.
func TestCloseEvent(t *testing.T) {
	sse := http.Header{"Content-Type": {"text/event-stream"}}
	for _, tc := range []struct {
		d    Dialect
		h    http.Header
		fed  []byte
		want string
	}{
		{OpenAI, sse, []byte("data: {\"a\":1}\n\ndata: {\"b\""), "\n\n"},
		{OpenAI, sse, []byte("data: {\"a\":1}\n\n"), ""},
		{Anthropic, sse, []byte("event: content_block_delta\n"), "\n\n"},
		{Gemini, sse, nil, ""},
		{Bedrock, http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, converseStream[:20], ""},
		{Bedrock, http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, converseStream, ""},
	} {
		s := tc.d.Stream(tc.h)
		s.Feed(tc.fed, func(Event) bool { return true })
		if got := s.CloseEvent(); string(got) != tc.want {
			t.Errorf("%s after %q: CloseEvent %q, want %q", tc.d.Kind(), tc.fed, got, tc.want)
		}
	}
}
