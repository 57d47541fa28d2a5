package main

import (
	"bufio"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
)

// rawPost sends a chat request carrying a header of size bytes to addr on
// a raw connection and returns the status it got (0 for none).
func rawPost(t *testing.T, addr string, size int) int {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	body := `{"model":"gpt-4o-mini","messages":[]}`
	req := "POST /openai/v1/chat/completions HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
		"X-Big: " + strings.Repeat("a", size) + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\nConnection: close\r\n\r\n" + body
	go conn.Write([]byte(req)) // the server may stop reading before the end
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Logf("no response: %v", err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A served gateway answers a 1 MiB request header with 431 and calls no
// upstream; a 32 KiB header passes (limits.max_header_bytes, 64 KiB).
func TestServeRefusesHugeHeaders(t *testing.T) {
	up := fake.NewServer("200")
	defer up.Close()
	p := startSluice(t, nil, "serve", "--config", writeConfig(t, up.URL, ""))
	if got := rawPost(t, p.addr, 1<<20); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("a 1 MiB header got %d, want 431", got)
	}
	if up.Calls() != 0 {
		t.Errorf("%d upstream calls for a refused request, want 0", up.Calls())
	}
	if got := rawPost(t, p.addr, 32<<10); got != http.StatusOK {
		t.Errorf("a 32 KiB header got %d, want 200", got)
	}
	if up.Calls() != 1 {
		t.Errorf("%d upstream calls, want 1", up.Calls())
	}
}
