// Package tracing exports the gateway's calls as OpenTelemetry traces over
// OTLP/HTTP: a server span for each call the gateway forwards, continuing
// the caller's trace when the request carries a W3C traceparent, and a
// client span for each upstream attempt under it, whose trace context goes
// upstream in the attempt's traceparent.
//
// The spans carry the GenAI semantic conventions' attributes
// (gen_ai.provider.name, gen_ai.operation.name, gen_ai.request.model, as of
// semantic conventions 1.37, which replaced gen_ai.system) and Sluice's own
// (sluice.*), read from the attempt log's line: never a prompt, a body, a
// header or a key.
//
// The engine knows tracing only through sluice.Tracer, so that the library
// does not depend on the OpenTelemetry SDK; this package implements it.
package tracing

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/request"
)

// Tracing makes and exports the gateway's spans. It is safe for concurrent
// use.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// New returns the Tracing that cfg describes, exporting in batches to its
// endpoint, else where the OTEL_EXPORTER_OTLP_* variables say; getenv
// reads OTEL_SERVICE_NAME when cfg names no service (nil: os.Getenv).
// Nothing is sent until a span ends.
func New(cfg config.Tracing, getenv func(string) string) (*Tracing, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	var opts []otlptracehttp.Option
	if cfg.Endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(cfg.Endpoint))
	}
	exp, err := otlptracehttp.New(context.Background(), opts...)
	if err != nil {
		return nil, errors.Join(errors.New("tracing: the OTLP/HTTP exporter cannot start (check tracing.endpoint and OTEL_EXPORTER_OTLP_*)"), err)
	}
	name := cfg.ServiceName
	if name == "" {
		name = getenv("OTEL_SERVICE_NAME")
	}
	if name == "" {
		name = "sluice"
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", name))),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	)
	return &Tracing{tp: tp, tracer: tp.Tracer("github.com/sluice-llm/sluice")}, nil
}

// Shutdown exports the spans still buffered and stops the exporter, within
// ctx.
func (t *Tracing) Shutdown(ctx context.Context) error { return t.tp.Shutdown(ctx) }

// ForceFlush exports the spans ended so far, within ctx.
func (t *Tracing) ForceFlush(ctx context.Context) error { return t.tp.ForceFlush(ctx) }

// Call is the span of one call the gateway forwards.
type Call struct {
	span trace.Span
}

// StartCall starts the span of a call on the route at prefix to a provider
// of kind, continuing the trace of the request's traceparent if any; id is
// the call's request id. The request returned carries the span in its
// context.
func (t *Tracing) StartCall(r *http.Request, prefix string, d dialect.Dialect, id string) (*http.Request, *Call) {
	ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := t.tracer.Start(ctx, r.Method+" "+prefix,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", prefix),
			attribute.String("gen_ai.provider.name", d.Traits().System),
			attribute.String("sluice.request_id", id),
		))
	return r.WithContext(ctx), &Call{span: span}
}

// CallEnd is what the end of a call tells its span.
type CallEnd struct {
	Model        string // the request's model, as the attempt log writes it; "" if none
	Status       int    // the status answered; 0 if none
	Attempts     int    // the upstream attempts made
	InputTokens  int64  // the answer's usage, when it reports one
	OutputTokens int64
	Usage        bool // the answer reported its usage
}

// End ends the call's span.
func (c *Call) End(e CallEnd) {
	if e.Model != "" {
		c.span.SetAttributes(attribute.String("gen_ai.request.model", e.Model))
	}
	if e.Status != 0 {
		c.span.SetAttributes(attribute.Int("http.response.status_code", e.Status))
	}
	if e.Usage {
		c.span.SetAttributes(attribute.Int64("gen_ai.usage.input_tokens", e.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", e.OutputTokens))
	}
	c.span.SetAttributes(attribute.Int("sluice.attempts", e.Attempts))
	if e.Status >= 500 {
		c.span.SetAttributes(attribute.String("error.type", strconv.Itoa(e.Status)))
		c.span.SetStatus(codes.Error, "")
	}
	c.span.End()
}

// Attempts returns the sluice.Tracer of the Transports that call providers
// speaking d (a route and its fallbacks speak one dialect): its spans say
// what the dialect says of each attempt, and name the provider as it
// does (dialect.Traits.System, one of the semantic conventions'
// well-known values).
func (t *Tracing) Attempts(d dialect.Dialect) sluice.Tracer {
	return &attempts{t: t, d: d, provider: d.Traits().System}
}

type attempts struct {
	t        *Tracing
	d        dialect.Dialect
	provider string
}

// StartAttempt starts an attempt's client span under the call's and puts
// its trace context in the attempt's headers.
//
// An attempt to a fallback of another dialect (a.Translated, from->to) is
// named by the target's dialect, and says the translation in
// sluice.translated.
func (at *attempts) StartAttempt(ctx context.Context, h http.Header, a *sluice.Attempt) (context.Context, func(*sluice.Attempt)) {
	d, system := at.d, at.provider
	if _, to, ok := strings.Cut(a.Translated, "->"); ok {
		if td, ok := dialect.Lookup(to); ok {
			d, system = td, td.Traits().System
		}
	}
	op := d.Request(a.Path, nil).Operation
	name := op
	if a.Model != "" {
		name += " " + request.Loggable(a.Model)
	}
	attrs := []attribute.KeyValue{
		attribute.String("gen_ai.provider.name", system),
		attribute.String("gen_ai.operation.name", op),
		attribute.String("sluice.provider", a.Provider),
		attribute.String("sluice.request_id", a.RequestID),
		attribute.Int("sluice.attempt", a.Attempt),
		attribute.String("sluice.breaker.state", a.Breaker),
		attribute.Float64("sluice.queued_ms", a.QueuedMS),
		attribute.String("http.request.method", a.Method),
	}
	if a.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", request.Loggable(a.Model)))
	}
	if a.Translated != "" {
		attrs = append(attrs, attribute.String("sluice.translated", a.Translated))
	}
	ctx, span := at.t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(a.TS), trace.WithAttributes(attrs...))
	at.t.prop.Inject(ctx, propagation.HeaderCarrier(h))
	return ctx, func(a *sluice.Attempt) { endAttempt(span, a) }
}

// endAttempt sets what the attempt's finished line tells and ends its span.
func endAttempt(span trace.Span, a *sluice.Attempt) {
	span.SetAttributes(
		attribute.String("sluice.outcome", string(a.Outcome)),
		attribute.Float64("sluice.retry.wait_ms", a.RetryInMS),
		attribute.Float64("sluice.ttfb_ms", a.TTFBMS),
		attribute.Int64("sluice.bytes_in", a.BytesIn),
		attribute.Bool("sluice.stream", a.Stream),
	)
	if a.Status != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", a.Status))
	}
	if a.CostUSD != 0 {
		span.SetAttributes(attribute.Float64("sluice.cost_usd", a.CostUSD))
	}
	if a.UpstreamRequestID != "" {
		span.SetAttributes(attribute.String("sluice.upstream_request_id", a.UpstreamRequestID))
	}
	if a.Outcome != sluice.OutcomeOK {
		class := a.Error
		if class == "" {
			class = string(a.Outcome)
		}
		span.SetAttributes(attribute.String("error.type", class))
		span.SetStatus(codes.Error, class)
	}
	span.End()
}
