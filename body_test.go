package sluice

import (
	"net/http"
	"strings"
	"testing"
)

// TestReadBody: a body the caller holds whole goes through Send, in place
// (send_test.go); RoundTrip reads any other.
func TestReadBody(t *testing.T) {
	b := []byte(`{"model":"m"}`)
	req, _ := http.NewRequest("POST", "http://p.test/v1/messages", strings.NewReader(string(b)))
	if got, _ := readBody(req); string(got) != string(b) {
		t.Fatalf("readBody of another body: %q", got)
	}
}
