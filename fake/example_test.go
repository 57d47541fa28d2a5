package fake_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/fake"
)

// A test server whose first call fails with 503 and whose later calls
// answer.
func ExampleNewServer() {
	s := fake.NewServer("503,200")
	defer s.Close()

	for range 2 {
		resp, err := http.Post(s.URL+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			fmt.Println(err)
			return
		}
		var out struct {
			Choices []struct{ Message struct{ Content string } }
			Error   struct{ Type string }
		}
		json.NewDecoder(resp.Body).Decode(&out)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fmt.Println(resp.StatusCode, out.Error.Type)
			continue
		}
		fmt.Println(resp.StatusCode, out.Choices[0].Message.Content)
	}
	fmt.Println("calls:", s.Calls())
	// Output:
	// 503 server_error
	// 200 This is a fake answer.
	// calls: 2
}

// A Provider in any httptest server, with a script chosen per request.
func ExampleProvider() {
	p := &fake.Provider{}
	srv := httptest.NewServer(p)
	defer srv.Close()

	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/messages",
		strings.NewReader(`{"model":"claude-haiku-4-5","max_tokens":64,"messages":[]}`))
	req.Header.Set(fake.ScriptHeader, "429:retry-after=2")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"), p.Requests()[0].Step)
	// Output:
	// 429 2 429:retry-after=2
}

// A Provider under a limit of 2 requests per minute, on a clock that
// stands still: the third call is refused until the first leaves the
// window, 60 s later.
func ExampleProvider_rateLimits() {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	p := &fake.Provider{RequestsPerMinute: 2, Now: func() time.Time { return now }}
	for range 3 {
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o-mini","messages":[]}`)))
		h := rec.Result().Header
		fmt.Printf("%d remaining %s reset %s Retry-After %q\n", rec.Code, h.Get("x-ratelimit-remaining-requests"),
			h.Get("x-ratelimit-reset-requests"), h.Get("Retry-After"))
	}
	fmt.Println("calls:", p.Calls(), "rate limited:", p.RateLimited(), "played:", p.Played())
	// Output:
	// 200 remaining 1 reset 1m0s Retry-After ""
	// 200 remaining 0 reset 1m0s Retry-After ""
	// 429 remaining 0 reset 1m0s Retry-After "60"
	// calls: 3 rate limited: 1 played: map[200:2]
}
