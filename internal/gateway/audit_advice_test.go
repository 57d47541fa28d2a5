package gateway

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/sluice-llm/sluice/internal/audit"
)

// TestAuditTimeoutAdvice checks the advice "sluice audit" gives, end to
// end: the official Go SDK with its retries at 0 and a timeout a little
// above the gateway's total (total + audit.TimeoutMargin), against a
// provider that never answers, gets the gateway's own 504 within the
// gateway's total + 1 s, after exactly max_attempts upstream calls, and
// makes no call of its own beyond the one.
func TestAuditTimeoutAdvice(t *testing.T) {
	e := newEnv(t, "hang", nil)
	p := e.cfg.Policies["interactive"]
	total, attempts := p.Timeout.Total, p.Retry.MaxAttempts
	if attempts < 2 {
		t.Fatalf("test policy has max_attempts %d, want retries to prove they are not multiplied", attempts)
	}
	c := openai.NewClient(
		ooption.WithBaseURL(e.srv.URL+"/openai/v1"),
		ooption.WithAPIKey("sk-test"),
		ooption.WithHTTPClient(sdkHTTPClient(t)),
		ooption.WithMaxRetries(0),
		ooption.WithRequestTimeout(total+audit.TimeoutMargin),
	)
	ctx, cancel := context.WithTimeout(t.Context(), 4*(total+audit.TimeoutMargin))
	defer cancel()

	start := time.Now()
	_, err := c.Chat.Completions.New(ctx, chatParams())
	elapsed := time.Since(start)

	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 504 || apiErr.Code != "timeout" {
		t.Fatalf("err = %v, want the gateway's 504 timeout", err)
	}
	if elapsed > total+time.Second {
		t.Errorf("the 504 came after %v, want within the gateway's total %v + 1 s", elapsed, total)
	}
	if got := e.up.Calls(); got != attempts {
		t.Errorf("upstream calls = %d, want max_attempts = %d", got, attempts)
	}
	if got, want := apiErr.Response.Header.Get("Sluice-Attempts"), strconv.Itoa(attempts); got != want {
		t.Errorf("Sluice-Attempts = %q, want %s", got, want)
	}
}
