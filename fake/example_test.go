package fake_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

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
