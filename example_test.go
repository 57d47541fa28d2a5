package sluice_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/fake"
)

func ExampleNewClient() {
	// A provider that fails twice with 503, then answers.
	provider := fake.NewServer("503,503,200")
	defer provider.Close()

	policy := sluice.Interactive()
	policy.Retry.Base = 10 * time.Millisecond // short backoffs for the example
	client := sluice.NewClient(policy)

	resp, err := client.Post(provider.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	fmt.Println(resp.StatusCode, "after", resp.Header.Get("Sluice-Attempts"), "attempts;", provider.Calls(), "upstream calls")
	// Output: 200 after 3 attempts; 3 upstream calls
}

func ExampleTransport() {
	provider := fake.NewServer("500")
	defer provider.Close()

	tr := &sluice.Transport{Provider: "openai", Policy: sluice.Policy{
		Retry:   sluice.Retry{MaxAttempts: 1},
		Breaker: sluice.Interactive().Breaker,
	}}
	client := &http.Client{Transport: tr}
	for i := 1; i <= 6; i++ {
		resp, err := client.Get(provider.URL + "/v1/chat/completions")
		var open *sluice.OpenError
		switch {
		case errors.As(err, &open):
			fmt.Printf("call %d: failed fast, provider_down (no upstream call)\n", i)
		case err != nil:
			fmt.Printf("call %d: %v\n", i, err)
		default:
			resp.Body.Close()
			fmt.Printf("call %d: %d\n", i, resp.StatusCode)
		}
	}
	fmt.Println(provider.Calls(), "upstream calls")
	// Output:
	// call 1: 500
	// call 2: 500
	// call 3: 500
	// call 4: 500
	// call 5: 500
	// call 6: failed fast, provider_down (no upstream call)
	// 5 upstream calls
}
