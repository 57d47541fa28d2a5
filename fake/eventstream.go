package fake

import (
	"bytes"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// framed is a dialect whose streams are not server-sent events: it names
// their content type and frames each event. Streams of a framed dialect
// send no keep-alive comments.
type framed interface {
	contentType() string
	frame(ev event) []byte
}

// eventStreamType is the content type of an AWS event stream.
const eventStreamType = "application/vnd.amazon.eventstream"

func (bedrock) contentType() string { return eventStreamType }

// frame encodes an event as one AWS event-stream message: an event whose
// name ends in "Exception" (throttlingException, …) as an exception
// message (:message-type exception, :exception-type the name), any other
// as an event message (:message-type event, :event-type the name), its
// data the JSON payload.
func (bedrock) frame(ev event) []byte {
	var m eventstream.Message
	if strings.HasSuffix(ev.name, "Exception") {
		m.Headers.Set(":message-type", eventstream.StringValue("exception"))
		m.Headers.Set(":exception-type", eventstream.StringValue(ev.name))
	} else {
		m.Headers.Set(":message-type", eventstream.StringValue("event"))
		m.Headers.Set(":event-type", eventstream.StringValue(ev.name))
	}
	m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
	m.Payload = ev.data
	var b bytes.Buffer
	_ = eventstream.NewEncoder().Encode(&b, m) // a bytes.Buffer does not fail
	return b.Bytes()
}
