package sluice

import (
	"strings"
	"testing"
)

// A client's model name that is not valid (too long, not UTF-8, control
// characters) never reaches a response header raw, and the attempt log
// carries a short escaped stand-in.
func TestInvalidModelNeverRawInHeaderOrLog(t *testing.T) {
	long := strings.Repeat("\xff", 100_000)
	for _, model := range []string{long, "gpt\r\nX-Injected: 1", strings.Repeat("m", 257)} {
		r := newRig(t, "200", fastPolicy())
		body := `{"model":"` + model + `","messages":[]}`
		resp, err := r.tr.RoundTrip(r.request("/v1/chat/completions", body))
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if got := resp.Header.Values("Sluice-Model"); len(got) != 0 {
			t.Errorf("Sluice-Model set to %.60q for an invalid name", got[0])
		}
		lines := r.lines()
		if len(lines) == 0 {
			t.Fatal("no attempt log line")
		}
		for _, l := range lines {
			logged, _ := l["model"].(string)
			if logged == model || len(logged) > 300 || strings.ContainsAny(logged, "\r\n\ufffd") {
				t.Errorf("the log's model is %.80q (%d bytes), want a short escaped stand-in", logged, len(logged))
			}
		}
	}
	r := newRig(t, "200", fastPolicy())
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if got := resp.Header.Get("Sluice-Model"); got != "gpt-4o-mini" {
		t.Errorf("Sluice-Model = %q for a valid name, want gpt-4o-mini", got)
	}
}

// A model the URL path names is the call's model, whatever the body says:
// an Azure deployment named in the path while the body names another
// model (as SDKs send it) names the log line and the Sluice-Model header.
func TestPathModelWinsOverBody(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	resp, err := r.tr.RoundTrip(r.request("/openai/deployments/dep-a/chat/completions", `{"model":"gpt-4o","messages":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	lines := r.lines()
	if len(lines) != 1 || lines[0]["model"] != "dep-a" || resp.Header.Get("Sluice-Model") != "dep-a" {
		t.Fatalf("log %v, Sluice-Model %q; want the deployment dep-a in both", lines, resp.Header.Get("Sluice-Model"))
	}
}
