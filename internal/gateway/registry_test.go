package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/redisstore"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// A breaker of the config open in Redis but missing from the registry (its
// record written by a release that kept none) is listed open, not closed.
func TestViewsReadKnownBreakersMissingFromRegistry(t *testing.T) {
	srv := redistest.Start(t)
	open := func() *redisstore.Store {
		st, err := redisstore.New(redisstore.Options{URL: srv.URL(), Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	if _, _, err := open().Apply("openai", breaker.Settings{Failures: 1, Cool: time.Hour}, breaker.Event{Kind: breaker.EventFailure}); err != nil {
		t.Fatal(err)
	}
	srv.Client().Del(context.Background(), "sluice:breakers") // as an older release left it
	views, err := Views(open(), []string{"anthropic", "openai"})
	if err != nil || len(views) != 2 || views[0].State != "closed" || views[1].Name != "openai" || views[1].State != "open" {
		t.Fatalf("Views = %+v, %v; want anthropic closed, openai open", views, err)
	}
}
