package sluice

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-llm/sluice/idempotency"
)

// A library Transport keeps callers apart as the gateway does: two
// requests with the same Idempotency-Key but different credentials, in
// any scheme or case, are two calls; the same credential again is
// replayed.
func TestTransportCallersApart(t *testing.T) {
	basic := func(u, p string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(u+":"+p)) }
	for _, pair := range [][2]string{
		{"bearer sk-alice", "bearer sk-mallory"},
		{basic("alice", "pw-1"), basic("mallory", "pw-2")},
		{"Token abc", "Token abd"},
		{"bearer sk-alice", ""},
	} {
		t.Run(pair[0]+" vs "+pair[1], func(t *testing.T) {
			r := newRig(t, "200", fastPolicy())
			r.tr.Answers = &idempotency.Memory{}
			body := `{"model":"gpt-4o-mini","messages":[]}`
			as := func(auth string) *http.Response {
				req := r.keyed("nightly", body)
				req.Header.Del("Authorization")
				if auth != "" {
					req.Header.Set("Authorization", auth)
				}
				resp, err := r.tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
				return resp
			}
			as(pair[0])
			if resp := as(pair[1]); resp.Header.Get("Idempotent-Replayed") != "" || r.srv.Calls() != 2 {
				t.Fatalf("another caller was replayed the first's answer (%d upstream calls)", r.srv.Calls())
			}
			if resp := as(pair[0]); resp.Header.Get("Idempotent-Replayed") != "true" {
				t.Errorf("the first caller again was not replayed")
			}
		})
	}
}

// A body that JSON parsers read differently is not sent.
func TestTransportRefusesAmbiguousBody(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	_, err := r.tr.RoundTrip(r.request("/v1/chat/completions", `{"model":"gpt-4o-mini","model":"gpt-4o"}`))
	if !errors.Is(err, ErrAmbiguousBody) {
		t.Errorf("error %v, want ErrAmbiguousBody", err)
	}
	if r.srv.Calls() != 0 {
		t.Errorf("%d upstream calls, want 0", r.srv.Calls())
	}
}

// An answer that echoes the request's credential is handed over but not
// kept.
func TestTransportKeepsNoCredential(t *testing.T) {
	var calls atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"choices":[{"message":{"content":%q}}]}`, req.Header.Get("Authorization"))
	}))
	defer up.Close()
	tr := &Transport{Policy: fastPolicy(), Provider: "openai", Answers: &idempotency.Memory{}}
	defer tr.CloseIdleConnections()
	for range 2 {
		req, _ := http.NewRequest("POST", up.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o-mini"}`))
		req.Header.Set("Authorization", "Bearer sk-library-secret-1")
		req.Header.Set("Idempotency-Key", "k")
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); !strings.Contains(got, "sk-library-secret-1") {
			t.Fatalf("answer %q", got)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("%d upstream calls, want 2: an answer holding a credential is not kept", calls.Load())
	}
}
