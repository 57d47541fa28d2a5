package gateway

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/request"
	"github.com/sluice-llm/sluice/internal/tracing"
)

// newTracing returns the gateway's tracing when the config turns it on,
// else nil: no span is made and the Transports get no Tracer.
func newTracing(cfg config.Tracing, getenv func(string) string) (*tracing.Tracing, error) {
	if !cfg.Enabled {
		return nil, nil
	}
	return tracing.New(cfg, getenv)
}

// tracedCall is the span of one call being forwarded, with what its end
// reports.
type tracedCall struct {
	call  *tracing.Call
	w     *statusWriter
	r     *http.Request // the request, its context carrying the span
	model string        // the request's model, as the attempt log writes it
}

// traceCall starts the span of a call on route rt, whose answer's usage is
// read in the dialect of its provider.
func (g *Gateway) traceCall(w http.ResponseWriter, r *http.Request, rt *route, id string) *tracedCall {
	r, call := g.tracing.StartCall(r, rt.prefix, rt.provider.d, id)
	return &tracedCall{call: call, w: &statusWriter{ResponseWriter: w, d: rt.provider.d}, r: r}
}

// setModel names the request's model, once the body is read.
func (tc *tracedCall) setModel(m string) {
	if m != "" {
		tc.model = request.Loggable(m)
	}
}

// end ends the span with the status answered, the attempts made and the
// answer's usage.
func (tc *tracedCall) end() {
	w := tc.w
	e := tracing.CallEnd{Model: tc.model, Status: w.status}
	e.Attempts, _ = strconv.Atoi(w.Header().Get("Sluice-Attempts"))
	var u dialect.Usage
	switch w.tap {
	case tapJSON:
		u, e.Usage = w.d.Usage(w.body)
	case tapStream:
		u, e.Usage = w.usage.Usage()
	}
	e.InputTokens, e.OutputTokens = u.Input, u.Output
	tc.call.End(e)
}

// statusWriter remembers the status a handler answered, and reads the
// usage of a successful answer as it goes by, in its dialect d (none when
// d is nil). Unwrap keeps http.ResponseController's Flush working through
// it.
type statusWriter struct {
	http.ResponseWriter
	d      dialect.Dialect
	status int
	tap    int                 // what is read of the answer: one of the tap constants
	body   []byte              // a JSON answer, up to maxUsageBody
	usage  dialect.UsageReader // a streamed answer's usage
}

// What statusWriter reads of an answer.
const (
	tapUndecided = iota
	tapNone
	tapJSON
	tapStream
)

// maxUsageBody bounds the JSON answer kept to read its usage.
const maxUsageBody = 8 << 20

func (w *statusWriter) WriteHeader(status int) {
	if w.status == 0 && status >= 200 {
		w.status = status
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.tap == tapUndecided {
		w.tap = tapNone
		ct := w.Header().Get("Content-Type")
		switch {
		case w.status/100 != 2 || w.d == nil:
		case w.d.Stream(w.Header()) != nil:
			w.tap, w.usage = tapStream, w.d.StreamUsage()
		case strings.Contains(ct, "json"):
			w.tap = tapJSON
		}
	}
	switch w.tap {
	case tapJSON:
		if len(w.body)+len(p) > maxUsageBody {
			w.tap, w.body = tapNone, nil
		} else {
			w.body = append(w.body, p...)
		}
	case tapStream:
		w.usage.Write(p)
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// shutdownTracing exports the spans still buffered, for at most five
// seconds.
func (sh *shared) shutdownTracing() error {
	if sh.tracing == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return sh.tracing.Shutdown(ctx)
}
