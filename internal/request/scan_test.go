package request

import (
	"strings"
	"testing"
)

func TestModel(t *testing.T) {
	tests := []struct{ body, want string }{
		{`{"model":"gpt-4o-mini","messages":[]}`, "gpt-4o-mini"},
		{` { "messages" : [{"model":"inner"}], "model" : "outer" } `, "outer"},
		{`{"a":{"model":"x"},"b":"}\"","model":"m\"q"}`, `m"q`},
		{`{"n":12.5e3,"t":true,"z":null,"model":"m"}`, "m"},
		{`{"model":"a\/b\\c\u00e9\ud83d\ude00\n"}`, "a/b\\cé😀\n"},
		{`{"model":"bad\uzzzz"}`, `bad\uzzzz`}, // an escape json.Valid refuses, kept as written
		{`{"model":5}`, ""},
		{`{"messages":[]}`, ""},
		{`[{"model":"x"}]`, ""},
		{`{"model":"unterminated`, ""},
		{``, ""},
		{`not json`, ""},
	}
	for _, tt := range tests {
		if got := Model([]byte(tt.body)); got != tt.want {
			t.Errorf("Model(%s) = %q, want %q", tt.body, got, tt.want)
		}
	}
}

func TestWithModel(t *testing.T) {
	tests := []struct{ body, model, want string }{
		{`{"model":"gpt-4o","messages":[]}`, "gpt-4o-mini", `{"model":"gpt-4o-mini","messages":[]}`},
		{`{"x":{"model":"keep"}, "model" : "old" }`, `new"one`, `{"x":{"model":"keep"}, "model" : "new\"one" }`},
	}
	for _, tt := range tests {
		got, ok := WithModel([]byte(tt.body), tt.model)
		if !ok || string(got) != tt.want {
			t.Errorf("WithModel(%s, %q) = %s, %v; want %s", tt.body, tt.model, got, ok, tt.want)
		}
	}
	if _, ok := WithModel([]byte(`{"messages":[]}`), "m"); ok {
		t.Error("WithModel replaced a model that is not there")
	}
}

func TestInt(t *testing.T) {
	if n, ok := Int([]byte(`{"model":"m","max_tokens": 64 ,"x":1}`), "max_tokens"); !ok || n != 64 {
		t.Errorf("Int = %d, %v; want 64, true", n, ok)
	}
	if _, ok := Int([]byte(`{"max_tokens":"64"}`), "max_tokens"); ok {
		t.Error("Int read a string as an integer")
	}
}

func FuzzModel(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-4o-mini","messages":[{"role":"user"}]}`))
	f.Add([]byte(`{"a":[1,{"b":"\""}],"model":"x"}`))
	f.Add([]byte(`{"model":"\ud83d\ude00\u"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m := Model(b)
		BodyModel(b)
		out, ok := WithModel(b, "replaced")
		if s, _ := findModel(b); ok != (s >= 0) {
			t.Fatalf("WithModel ok=%v but findModel disagrees", ok)
		}
		if ok && Model(out) != "replaced" {
			t.Fatalf("after WithModel the model is %q (was %q) in %q", Model(out), m, out)
		}
	})
}

// TestMembersIsWalkOnValidText: on every valid case, Members shows the
// members Walk shows and is true, as Walk is; and it stops where the
// member function says.
func TestMembersIsWalkOnValidText(t *testing.T) {
	for _, c := range validCases {
		data := []byte(c)
		if !Walk(data, nil) {
			continue
		}
		var walked, shown []string
		Walk(data, func(k, v []byte) bool { walked = append(walked, string(k)+"="+string(v)); return true })
		if !Members(data, func(k, v []byte) bool { shown = append(shown, string(k)+"="+string(v)); return true }) {
			t.Errorf("Members(%.40q) is false on a valid text", c)
		}
		if strings.Join(walked, "\n") != strings.Join(shown, "\n") {
			t.Errorf("Members(%.40q) shows %q, Walk %q", c, shown, walked)
		}
	}
	n := 0
	if Members([]byte(chatAnswer), func(k, v []byte) bool { n++; return false }) || n != 1 {
		t.Errorf("Members went on after its member function stopped it (%d members)", n)
	}
}
