package fake

import (
	"strings"

	"github.com/sluice-llm/sluice/internal/awsevent"
)

// framed is a dialect whose streams are not server-sent events: it names
// their content type and frames each event. Streams of a framed dialect
// send no keep-alive comments.
type framed interface {
	contentType() string
	frame(ev event) []byte
}

// eventStreamType is the content type of an AWS event stream.
const eventStreamType = awsevent.ContentType

func (bedrock) contentType() string { return eventStreamType }

// frame encodes an event as one AWS event-stream message: an event whose
// name ends in "Exception" (throttlingException, …) as an exception
// message (:message-type exception, :exception-type the name), any other
// as an event message (:message-type event, :event-type the name), its
// data the JSON payload.
func (bedrock) frame(ev event) []byte {
	typ := awsevent.Event
	if strings.HasSuffix(ev.name, "Exception") {
		typ = awsevent.Exception
	}
	return awsevent.Frame{Type: typ, Name: ev.name, Payload: ev.data}.Encode()
}
