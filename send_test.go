package sluice

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
)

// okBase answers every request 200 with a small JSON body, after reading
// the request body to its end.
func okBase() http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
		}
		return &http.Response{
			StatusCode: 200, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header:  http.Header{"Content-Type": {"application/json"}},
			Body:    io.NopCloser(strings.NewReader(`{"ok":true}`)),
			Request: r,
		}, nil
	})
}

// allocatedPerCall returns the bytes call allocates, on average over n calls.
func allocatedPerCall(n int, call func()) uint64 {
	call() // warm up: the breaker, pools
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		call()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / uint64(n)
}

func TestSendUsesBodyInPlace(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 1<<20)
	payload := append(append([]byte(`{"model":"m","messages":[{"role":"user","content":"`), big...), `"}]}`...)
	tr := &Transport{Base: okBase(), Provider: "p", Policy: fastPolicy()}
	do := func(send bool) {
		req, _ := http.NewRequest("POST", "http://p.test/v1/chat/completions", nil)
		var resp *http.Response
		var err error
		if send {
			resp, err = tr.Send(req, Body{Bytes: payload, Model: "m"})
		} else {
			req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(payload)), int64(len(payload))
			resp, err = tr.RoundTrip(req)
		}
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	sent := allocatedPerCall(20, func() { do(true) })
	tripped := allocatedPerCall(20, func() { do(false) })
	if sent > 64<<10 {
		t.Errorf("Send of a %d-byte body allocated %d bytes a call: the body was copied", len(payload), sent)
	}
	if tripped < uint64(len(payload)) {
		t.Errorf("RoundTrip allocated %d bytes a call, less than the body it must read (%d): the measure is wrong", tripped, len(payload))
	}
}

// recordingMeter records what Reserve is told and prices nothing.
type recordingMeter struct {
	models    []string
	bodyBytes int
	maxTokens int64
}

func (m *recordingMeter) Reserve(ask hook.Ask) (float64, func(float64), error) {
	m.models, m.bodyBytes, m.maxTokens = ask.Models, ask.BodyBytes, ask.MaxTokens
	return -1, nil, nil
}

func (m *recordingMeter) Count(dialect.Dialect, string, bool, int) (func([]byte), func() (float64, int64)) {
	return nil, nil
}

func TestSendTrustsModelAndMaxTokens(t *testing.T) {
	p := fastPolicy()
	p.BreakerScope = ScopeModel
	meter := &recordingMeter{}
	var logged []string
	tr := &Transport{Base: okBase(), Provider: "p", Policy: p, Meter: meter,
		Observe: func(a *Attempt) { logged = append(logged, a.Model) }}
	// A body the Transport cannot parse: what it uses can only come from Body.
	payload := []byte(`not json, "model":"parsed","max_tokens":9`)
	req, _ := http.NewRequest("POST", "http://p.test/v1/chat/completions", strings.NewReader("ignored"))
	resp, err := tr.Send(req, Body{Bytes: payload, Model: "given", MaxTokens: 77})
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	if got, want := meter.models, []string{"given"}; len(got) != 1 || got[0] != want[0] {
		t.Errorf("Meter told models %q, want %q", got, want)
	}
	if meter.maxTokens != 77 || meter.bodyBytes != len(payload) {
		t.Errorf("Meter told max tokens %d, body %d bytes; want 77, %d", meter.maxTokens, meter.bodyBytes, len(payload))
	}
	if _, ok := tr.breakers.Load("p/given"); !ok {
		var names []any
		tr.breakers.Range(func(k, _ any) bool { names = append(names, k); return true })
		t.Errorf("no breaker p/given; breakers: %v", names)
	}
	if got := resp.Header.Get("Sluice-Model"); got != "given" {
		t.Errorf("Sluice-Model = %q, want given", got)
	}
	if len(logged) != 1 || logged[0] != "given" {
		t.Errorf("attempts logged with models %q, want [given]", logged)
	}
	if req.Body == nil {
		t.Error("Send changed the caller's request")
	}
	if b, _ := io.ReadAll(req.Body); string(b) != "ignored" {
		t.Errorf("Send read req.Body (left %q)", b)
	}
}

func TestSendWithoutBody(t *testing.T) {
	var got []byte
	var length int64 = -2
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		length = r.ContentLength
		if r.Body != nil {
			got, _ = io.ReadAll(r.Body)
		}
		return okBase().RoundTrip(r)
	})
	tr := &Transport{Base: base, Provider: "p", Policy: fastPolicy()}
	req, _ := http.NewRequest("POST", "http://p.test/v1/chat/completions", strings.NewReader("ignored"))
	resp, err := tr.Send(req, Body{})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(got) != 0 || length != 0 {
		t.Errorf("Send with no body sent %q (ContentLength %d)", got, length)
	}
}
