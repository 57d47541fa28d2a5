package sluice

import (
	"net/http"
	"strings"
	"testing"
)

func TestJSONModel(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"model":"gpt-4o-mini","messages":[]}`, "gpt-4o-mini"},
		{` { "messages" : [{"model":"inner"}], "model" : "outer" } `, "outer"},
		{`{"a":{"model":"x"},"b":"}\"","model":"m\"q"}`, `m"q`},
		{`{"n":12.5e3,"t":true,"z":null,"model":"m"}`, "m"},
		{`{"model":5}`, ""},
		{`{"messages":[]}`, ""},
		{`[{"model":"x"}]`, ""},
		{`{"model":"unterminated`, ""},
		{``, ""},
		{`not json`, ""},
	}
	for _, tt := range tests {
		if got := jsonModel([]byte(tt.body)); got != tt.want {
			t.Errorf("jsonModel(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestWithModel(t *testing.T) {
	tests := []struct{ body, model, want string }{
		{`{"model":"gpt-4o","messages":[]}`, "gpt-4o-mini", `{"model":"gpt-4o-mini","messages":[]}`},
		{`{"x":{"model":"keep"}, "model" : "old" }`, `new"one`, `{"x":{"model":"keep"}, "model" : "new\"one" }`},
	}
	for _, tt := range tests {
		got, ok := withModel([]byte(tt.body), tt.model)
		if !ok || string(got) != tt.want {
			t.Errorf("withModel(%s, %q) = %s, %v; want %s", tt.body, tt.model, got, ok, tt.want)
		}
	}
	if _, ok := withModel([]byte(`{"messages":[]}`), "m"); ok {
		t.Error("withModel replaced a model that is not there")
	}
}

func FuzzJSONModel(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user"}]}`))
	f.Add([]byte(`{"a":[1,{"b":"\""}],"model":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := jsonModel(b)
		out, ok := withModel(b, "replaced")
		if ok != (findModelOK(b)) {
			t.Fatalf("withModel ok=%v but findModel disagrees", ok)
		}
		if ok && jsonModel(out) != "replaced" {
			t.Fatalf("after withModel the model is %q (was %q) in %q", jsonModel(out), m, out)
		}
	})
}

func findModelOK(b []byte) bool { s, _ := findModel(b); return s >= 0 }

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
