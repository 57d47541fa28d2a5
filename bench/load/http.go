package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// newTransport returns a keep-alive transport that may hold conns idle
// connections per host.
func newTransport(conns int) *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns * 4,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// dialect is an API shape: the path under a base URL and a small body.
type dialect struct {
	path       string
	body       []byte
	streamBody []byte
}

var dialects = map[string]dialect{
	"openai": {
		path:       "/v1/chat/completions",
		body:       []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":32}`),
		streamBody: []byte(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in one short sentence."}],"max_tokens":32,"stream":true}`),
	},
	"anthropic": {
		path:       "/v1/messages",
		body:       []byte(`{"model":"claude-haiku-4-5","max_tokens":32,"messages":[{"role":"user","content":"Say hello in one short sentence."}]}`),
		streamBody: []byte(`{"model":"claude-haiku-4-5","max_tokens":32,"messages":[{"role":"user","content":"Say hello in one short sentence."}],"stream":true}`),
	},
}

func lookupDialect(name string) (dialect, error) {
	d, ok := dialects[name]
	if !ok {
		return dialect{}, fmt.Errorf("--dialect %q: use openai or anthropic", name)
	}
	return d, nil
}

// call is one request to make.
type call struct {
	url    string
	body   []byte
	script string // Sluice-Fake-Script header, "" for none
}

// newRequest builds the POST of c.
func (c call) newRequest(ctx context.Context) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-bench")
	req.Header.Set("X-Api-Key", "sk-bench")
	req.Header.Set("Anthropic-Version", "2023-06-01")
	if c.script != "" {
		req.Header.Set("Sluice-Fake-Script", c.script)
	}
	return req, nil
}

// do makes the call, reads the whole answer and returns the time from
// before sending to the last byte, and the status (0 on error).
func (c call) do(ctx context.Context, hc *http.Client) (time.Duration, int, error) {
	req, err := c.newRequest(ctx)
	if err != nil {
		return 0, 0, err
	}
	return doReq(hc, req)
}

// doReq sends req, reads the whole answer and returns the time taken and
// the status (0 when none arrived).
func doReq(hc *http.Client, req *http.Request) (time.Duration, int, error) {
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return time.Since(start), 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), resp.StatusCode, err
}

// getCalls returns the fake's call count (GET /fake/calls).
func getCalls(fakeBase string) (int, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	resp, err := hc.Get(fakeBase + "/fake/calls")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var v struct {
		Calls *int `json:"calls"`
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(b, &v); err != nil || v.Calls == nil {
		return 0, fmt.Errorf("GET %s/fake/calls answered %q", fakeBase, b)
	}
	return *v.Calls, nil
}

// resetFake forgets the fake's recorded calls, so that a long run does
// not grow its memory; "" does nothing.
func resetFake(fakeBase string) error {
	if fakeBase == "" {
		return nil
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	resp, err := hc.Post(fakeBase+"/fake/reset", "", nil)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("POST %s/fake/reset answered %d", fakeBase, resp.StatusCode)
	}
	return nil
}
