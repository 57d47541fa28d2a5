package gateway

import (
	"context"
	"net/http"
	"strconv"
	"time"

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

// traceCall starts the span of a call on route rt.
func (g *Gateway) traceCall(w http.ResponseWriter, r *http.Request, rt *route, id string) *tracedCall {
	r, call := g.tracing.StartCall(r, rt.prefix, rt.provider.kind, id)
	return &tracedCall{call: call, w: &statusWriter{ResponseWriter: w}, r: r}
}

// setModel names the request's model, once the body is read.
func (tc *tracedCall) setModel(m string) {
	if m != "" {
		tc.model = request.Loggable(m)
	}
}

// end ends the span with the status answered and the attempts made.
func (tc *tracedCall) end() {
	attempts, _ := strconv.Atoi(tc.w.Header().Get("Sluice-Attempts"))
	tc.call.End(tc.model, tc.w.status, attempts, nil)
}

// statusWriter remembers the status a handler answered. Unwrap keeps
// http.ResponseController's Flush working through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

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
