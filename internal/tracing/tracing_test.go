package tracing

import (
	"context"
	"net/http"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
)

// Each dialect's gen_ai.provider.name is the semantic conventions'
// well-known value.
func TestProviderName(t *testing.T) {
	for kind, want := range map[string]string{
		"openai": "openai", "anthropic": "anthropic", "azure": "azure.ai.openai", "gemini": "gcp.gemini",
		"bedrock": "aws.bedrock", "vertex": "gcp.vertex_ai",
	} {
		d, _ := dialect.Lookup(kind)
		if got := d.Traits().System; got != want {
			t.Errorf("%s: System %q, want %q", kind, got, want)
		}
	}
}

// An attempt to a fallback of another dialect is traced as the dialect
// that answers it, and says the translation; an untranslated one keeps
// its route's dialect.
func TestTranslatedAttemptSpan(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := &Tracing{tp: tp, tracer: tp.Tracer("test")}
	at := tr.Attempts(dialect.OpenAI)
	for _, a := range []*sluice.Attempt{
		{Provider: "openai", Model: "gpt-4o", Method: "POST", Path: "/v1/chat/completions", Outcome: sluice.OutcomeRetry},
		{Provider: "claude", Model: "claude-haiku-4-5", Method: "POST", Path: "/v1/messages", Translated: "openai->anthropic", Outcome: sluice.OutcomeOK},
	} {
		_, end := at.StartAttempt(context.Background(), http.Header{}, a)
		end(a)
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for i, want := range []struct{ name, system, op, translated string }{
		{"chat gpt-4o", "openai", "chat", ""},
		{"chat claude-haiku-4-5", "anthropic", "chat", "openai->anthropic"},
	} {
		got := map[string]string{}
		for _, kv := range spans[i].Attributes() {
			got[string(kv.Key)] = kv.Value.Emit()
		}
		if spans[i].Name() != want.name || got["gen_ai.provider.name"] != want.system || got["gen_ai.operation.name"] != want.op || got["sluice.translated"] != want.translated {
			t.Errorf("span %d: %q %v; want %q, %s, %s, translated %q", i, spans[i].Name(), got, want.name, want.system, want.op, want.translated)
		}
	}
}
