package sluice

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
)

// TestQuotaOrRate is the rule that splits 429s: a rate limit is retried
// (its hint honoured) and tells the breaker nothing; a quota or credit
// that is used up is never retried, and never counted by the breaker
// either. The bodies are the providers' own wordings.
func TestQuotaOrRate(t *testing.T) {
	cases := []struct {
		name  string
		body  string
		quota bool
	}{
		{"openai rate", `{"error":{"message":"Rate limit reached for requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 20s.","type":"requests","code":"rate_limit_exceeded"}}`, false},
		{"openai quota", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`, true},
		{"openai billing", `{"error":{"message":"Billing hard limit has been reached","type":"invalid_request_error","code":"billing_hard_limit_reached"}}`, true},
		{"anthropic rate", `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50 requests per minute."}}`, false},
		{"azure token rate", `{"error":{"code":"429","message":"Requests to the ChatCompletions_Create Operation under Azure OpenAI API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease if you would like to further increase the default rate limit."}}`, false},
		{"azure call rate", `{"error":{"code":"429","message":"Requests to the Embeddings_Create Operation under Azure OpenAI API version 2023-06-01-preview have exceeded call rate limit of your current OpenAI S0 pricing tier. Please retry after 54 seconds."}}`, false},
		{"azure rate, new wording", `{"error":{"code":"429","message":"Your requests to gpt-4o for gpt-4o in East US 2 have exceeded the token rate limit for your current AIServices S0 pricing tier. Please retry after 60 seconds. To increase your default rate limit, visit: https://aka.ms/oai/quotaincrease."}}`, false},
		{"azure peak load", `{"error":{"code":"429","message":"The system is currently experiencing high demand and cannot process your request. Please retry after 20 seconds."}}`, false},
		{"azure call volume quota", `{"error":{"code":"429","message":"Out of call volume quota for this Azure OpenAI resource. Quota will be replenished in 2.00:00:00."}}`, true},
		{"azure exceeded call volume quota", `{"error":{"code":"429","message":"Requests to this resource have exceeded call volume quota."}}`, true},
		{"azure quota exceeded", `{"error":{"code":"QuotaExceeded","message":"Quota exceeded for this subscription. Check billing for the resource."}}`, true},
		{"azure insufficient quota", `{"error":{"code":"insufficient_quota","message":"Insufficient quota."}}`, true},
		{"empty", ``, false},
	}
	r := Interactive().Retry
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := dialect.OpenAI
			switch {
			case strings.HasPrefix(tc.name, "azure"):
				d = dialect.Azure
			case strings.HasPrefix(tc.name, "anthropic"):
				d = dialect.Anthropic
			}
			v := r.judgeStatus(d, http.StatusTooManyRequests, http.Header{}, []byte(tc.body))
			if v.retryable == tc.quota {
				t.Errorf("retryable = %v for quota = %v", v.retryable, tc.quota)
			}
			if v.breaker != breaker.Ignored {
				t.Errorf("breaker told %v, want Ignored: a 429 is not an outage", v.breaker)
			}
			if wantClass := tc.quota; (v.class == classQuota) != wantClass {
				t.Errorf("class = %q", v.class)
			}
		})
	}
}
