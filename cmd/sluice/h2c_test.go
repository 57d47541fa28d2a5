package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/fake"
)

// TestServeSpeaksH2C: `sluice serve`'s plain port answers HTTP/2 with
// prior knowledge (h2c), as the AWS SDK for JavaScript speaks by default,
// a stream relayed whole over it, and HTTP/1.1 on the same port.
func TestServeSpeaksH2C(t *testing.T) {
	up := fake.NewServer("200")
	defer up.Close()
	p := startSluice(t, nil, "serve", "--config", writeConfig(t, up.URL, ""))
	tr := &http.Transport{Protocols: new(http.Protocols)}
	tr.Protocols.SetUnencryptedHTTP2(true)
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Post("http://"+p.addr+"/openai/v1/chat/completions", "application/json", strings.NewReader(streamReq))
	if err != nil {
		t.Fatalf("h2c: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.ProtoMajor != 2 || resp.StatusCode != 200 || normalise(string(b)) != normalise(directStream(t, up.URL)) {
		t.Errorf("h2c stream: %s %d %q; want HTTP/2.0 200 and the provider's stream", resp.Proto, resp.StatusCode, b)
	}
	if code := postChat(t, p); code != 200 {
		t.Errorf("HTTP/1.1 on the same port: %d", code)
	}
}
