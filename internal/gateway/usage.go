package gateway

import (
	"bytes"
	"encoding/json"
)

// The usage chunk: an OpenAI-compatible stream reports its usage only when
// the request asks for it (stream_options.include_usage), in a last chunk
// with no choices. Under a budget the gateway asks for it when the client
// did not, so the call is settled to its real cost, and hides that chunk
// from the client, which did not ask for it.

var includeUsage = []byte(`"stream_options":{"include_usage":true},`)

// withStreamUsage returns an OpenAI chat request that streams without
// asking for usage with the ask added, and true; any other body unchanged
// and false.
func withStreamUsage(body []byte) ([]byte, bool) {
	var req struct {
		Stream        bool            `json:"stream"`
		StreamOptions json.RawMessage `json:"stream_options"`
	}
	if json.Unmarshal(body, &req) != nil || !req.Stream || len(req.StreamOptions) > 0 {
		return body, false
	}
	i := bytes.IndexByte(body, '{')
	out := make([]byte, 0, len(body)+len(includeUsage))
	out = append(out, body[:i+1]...)
	out = append(out, includeUsage...)
	return append(out, body[i+1:]...), true
}

// usageFilter drops the usage-only chunk from a relayed stream. It holds
// back only the bytes of an event not yet complete.
type usageFilter struct {
	pending []byte
}

// filter returns the complete events of pending and p, the usage-only
// chunk left out, and keeps the incomplete rest.
func (f *usageFilter) filter(p []byte) []byte {
	f.pending = append(f.pending, p...)
	end := bytes.LastIndex(f.pending, []byte("\n\n"))
	if end < 0 {
		return nil
	}
	end += 2
	complete := f.pending[:end]
	var out []byte
	for len(complete) > 0 {
		i := bytes.Index(complete, []byte("\n\n")) + 2
		ev := complete[:i]
		if !isUsageChunk(ev) {
			out = append(out, ev...)
		}
		complete = complete[i:]
	}
	f.pending = append(f.pending[:0], f.pending[end:]...)
	return out
}

// rest returns what is held back: an event the stream did not finish.
func (f *usageFilter) rest() []byte {
	r := f.pending
	f.pending = nil
	return r
}

func isUsageChunk(ev []byte) bool {
	return bytes.Contains(ev, []byte(`"choices":[]`)) && bytes.Contains(ev, []byte(`"usage":{`))
}
