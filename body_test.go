package sluice

import (
	"net/http"
	"strings"
	"testing"
)

func TestNewBodyUsedInPlace(t *testing.T) {
	b := []byte(`{"model":"m"}`)
	req, _ := http.NewRequest("POST", "http://p.test/v1/messages", NewBody(b))
	got, err := readBody(req)
	if err != nil || &got[0] != &b[0] {
		t.Fatalf("readBody copied a NewBody (%v)", err)
	}
	req, _ = http.NewRequest("POST", "http://p.test/v1/messages", strings.NewReader(string(b)))
	if got, _ := readBody(req); string(got) != string(b) {
		t.Fatalf("readBody of another body: %q", got)
	}
}
