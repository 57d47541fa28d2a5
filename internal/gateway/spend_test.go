package gateway

import (
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
)

// tenCentCalls prices the fake's 5 output tokens (and max_tokens 5) at
// exactly $0.10.
func tenCentCalls(limit float64, scope string) func(*config.Config) {
	return func(c *config.Config) {
		c.Prices = map[string]spend.Price{"gpt-4o-mini*": {Input: 0, Output: 20000}}
		c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: limit, Period: "day", Scope: scope}}
	}
}

const cappedBody = `{"model":"gpt-4o-mini","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`

func TestGatewaySpendCap(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		tenCentCalls(1.00, "all")(c)
		// 64 calls at once on a busy machine: a prompt answer must not be
		// taken for a silent provider.
		p := c.Policies["interactive"]
		p.Timeout.FirstByte, p.Timeout.Total = 10*time.Second, 20*time.Second
		c.Policies["interactive"] = p
	})
	var ok, capped atomic.Int32
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			resp := e.do("POST", "/openai/v1/chat/completions", cappedBody)
			switch resp.StatusCode {
			case 200:
				ok.Add(1)
				if resp.Header.Get("Sluice-Budget-Remaining") == "" {
					t.Error("an answer under a budget lacks Sluice-Budget-Remaining")
				}
				body(t, resp)
			case 429:
				capped.Add(1)
				if code := gatewayError(t, resp, "openai"); code != "budget_exhausted" {
					t.Errorf("code %q", code)
				}
			default:
				t.Errorf("status %d: %s", resp.StatusCode, body(t, resp))
			}
		})
	}
	wg.Wait()
	if ok.Load() != 10 || capped.Load() != 54 || e.up.Calls() != 10 {
		t.Fatalf("admitted %d, capped %d, upstream %d; want 10, 54, 10", ok.Load(), capped.Load(), e.up.Calls())
	}
	m := body(t, e.do("GET", "/metrics", ""))
	for _, want := range []string{`sluice_budget_spent_usd{budget="daily"} 1`, `sluice_budget_remaining_usd{budget="daily"} 0`, `sluice_spend_usd_total{model="gpt-4o-mini",provider="openai"}`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestGatewaySpendCapPerKey(t *testing.T) {
	e := newEnv(t, "200", tenCentCalls(0.20, "key"))
	for _, key := range []string{"sk-a", "sk-b"} {
		for i := range 3 {
			resp := e.do("POST", "/openai/v1/chat/completions", cappedBody, "Authorization", "Bearer "+key)
			body(t, resp)
			if want := map[bool]int{true: 200, false: 429}[i < 2]; resp.StatusCode != want {
				t.Errorf("%s call %d: %d, want %d", key, i+1, resp.StatusCode, want)
			}
		}
	}
	if strings.Contains(e.logs.String(), "sk-a") {
		t.Error("a client key reached the attempt log")
	}
}

func TestGatewayUnpricedModelRefused(t *testing.T) {
	e := newEnv(t, "200", tenCentCalls(1, "all"))
	resp := e.do("POST", "/openai/v1/chat/completions", `{"model":"o9-unknown","messages":[]}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d, want 400", resp.StatusCode)
	}
	if got := body(t, resp); !strings.Contains(got, "o9-unknown") || !strings.Contains(got, "prices") {
		t.Errorf("message %s does not name the model and the fix", got)
	}
	if e.up.Calls() != 0 {
		t.Error("an unpriced call reached upstream")
	}
}

func TestStreamUsageAskedForAndHidden(t *testing.T) {
	e := newEnv(t, "200", tenCentCalls(10, "all"))
	resp := e.do("POST", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"max_tokens":5,"messages":[]}`)
	got := body(t, resp)
	if strings.Contains(got, `"usage":{`) || !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Errorf("the client, which did not ask for usage, got %q", got)
	}
	if up := string(e.up.Requests()[0].Body); !strings.Contains(up, `"stream_options":{"include_usage":true}`) {
		t.Errorf("upstream body %s does not ask for usage", up)
	}
	m := body(t, e.do("GET", "/metrics", ""))
	if !strings.Contains(m, `sluice_budget_spent_usd{budget="daily"} 0.1`+"\n") {
		t.Errorf("spend is not the $0.10 the usage chunk reports:\n%s", grepLines(m, "sluice_budget"))
	}

	resp = e.do("POST", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"max_tokens":5,"messages":[]}`)
	if got := body(t, resp); !strings.Contains(got, `"usage":{`) {
		t.Errorf("a client that asked for usage did not get it: %q", got)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
