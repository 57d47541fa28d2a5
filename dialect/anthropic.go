package dialect

import (
	"net/http"
	"strings"
)

// Anthropic is Anthropic's Messages API: the model in the body, a stream
// asked for by "stream": true and framed as named server-sent events
// ending in message_stop, errors as {"type":"error","error":{"type":
// "overloaded_error"}} (an "event: error" in a stream), the key in
// x-api-key.
var Anthropic Dialect = anthropic{}

type anthropic struct{}

func (anthropic) Kind() string { return "anthropic" }

// owns claims the Messages API's path, for a caller that names no
// dialect.
func (anthropic) owns(p string) bool { return strings.HasSuffix(p, "/messages") }

func (anthropic) Request(path string, body []byte) Request { return bodyRequest(path, body) }

func (anthropic) Retarget(path string, body []byte, model string) (string, []byte, bool) {
	return bodyRetarget(path, body, model)
}

func (anthropic) Judge(status int, h http.Header, body []byte) Judgment { return Judgment{} }

func (anthropic) Stream(h http.Header) Stream { return newSSEStream(h, classifyEvent) }
