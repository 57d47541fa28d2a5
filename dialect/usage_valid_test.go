package dialect

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/request"
)

// validCases are texts json.Valid is tricky about: escapes, bytes that are
// not UTF-8 (valid inside strings only), control characters, numbers,
// literals, trailing bytes and nesting.
var validCases = []string{
	``, ` `, `{}`, `[]`, `{ }`, `[ ]`, ` {} `, "\t\r\n{}\n", `{}}`, `{}x`, `{} {}`, `[],`, `"a" "b"`,
	`{"a":1}`, `{"a":1,}`, `{"a" 1}`, `{"a":}`, `{a:1}`, `{"a":1 "b":2}`, `{,}`, `[,]`, `[1,]`, `[1,,2]`,
	`[1 2]`, `{"a":[1,{"b":null}],"c":true}`, `{"a":1]`, `[1}`, `[`, `{`, `{"a"`, `{"a":`, `{"a":1`,
	`"`, `"abc`, `"a\"b"`, `"\\"`, `"\/"`, `"\b\f\n\r\t"`, `"\a"`, `"\x41"`, `"\'"`, `"\u"`, `"\u12"`,
	`"\u12g4"`, `"\u00e9"`, `"\uD800"`, `"\uDC00\uD800"`, `"\UABCD"`, "\"a\x00b\"", "\"a\x1fb\"",
	"\"a\x7fb\"", "\"tab\there\"", "\"\xff\xfe\"", "\"\xc3\x28\"", "\"\xed\xa0\x80\"", "\xef\xbb\xbf{}",
	"{\"\xff\":1}", "\xff", `"\`, `"\"`,
	`0`, `-`, `-0`, `01`, `-01`, `00`, `1.`, `1.5`, `.5`, `-.5`, `1e`, `1e+`, `1e-`, `1e5`, `1E+05`,
	`1.5e-3`, `1.e3`, `+1`, `1x`, `0x10`, `1ee2`, `1e2.5`, `-a`, `123456789012345678901234567890`,
	`Infinity`, `NaN`, `[-]`, `{"a":-}`, `[1.]`, `[01]`, `[1e]`,
	`{"a":{"b":{"c":1}},"d":[{"e":2}],"f":{}}`, `{ "a" : [ ] , "b" : { } , "c" : "x" }`, `{"a":{}}`,
	`true`, `false`, `null`, `tru`, `nul`, `True`, `nulll`, `[true,false,null]`, `truefalse`,
	strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth),
	strings.Repeat("[", maxDepth+1) + strings.Repeat("]", maxDepth+1),
	strings.Repeat(`{"a":`, maxDepth) + "1" + strings.Repeat("}", maxDepth),
	strings.Repeat(`{"a":`, maxDepth+1) + "1" + strings.Repeat("}", maxDepth+1),
	strings.Repeat("[", 300) + strings.Repeat("]", 299),
	strings.Repeat(`[{"a":`, 100) + "0" + strings.Repeat("}]", 100),
	strings.Repeat(`[{"a":`, 100) + "0" + strings.Repeat("]}", 100),
	usageChatAnswer, usageChatAnswer + "x", usageChatAnswer[:len(usageChatAnswer)-1],
}

// TestValidJSONAgreesWithEncodingJSON: validJSON says what json.Valid
// says, case by case.
func TestValidJSONAgreesWithEncodingJSON(t *testing.T) {
	valid := 0
	for _, c := range validCases {
		want := json.Valid([]byte(c))
		if got := validJSON([]byte(c)); got != want {
			t.Errorf("validJSON(%.60q) = %v, json.Valid says %v", c, got, want)
		}
		if want {
			valid++
			checkMembers(t, []byte(c))
		}
	}
	if valid == 0 || valid == len(validCases) {
		t.Fatalf("%d of %d cases valid: the table must hold both kinds", valid, len(validCases))
	}
}

// TestValidJSONAllocatesNothing: a usual answer is checked without
// allocating.
func TestValidJSONAllocatesNothing(t *testing.T) {
	body := []byte(usageChatAnswer)
	if n := testing.AllocsPerRun(100, func() { validJSON(body) }); n != 0 {
		t.Errorf("validJSON allocates %v times", n)
	}
}

// FuzzValidJSON: on any bytes, validJSON agrees with json.Valid. The
// table's deep nestings, tens of KiB, are left to the table test: the
// fuzzer would spend its time minimizing them.
func FuzzValidJSON(f *testing.F) {
	for _, c := range validCases {
		if len(c) <= 1024 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := json.Valid(data)
		if got := validJSON(data); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", data, got, want)
		}
		if got := walkValid(data, nil); got != want {
			t.Fatalf("walkValid(%q) = %v, json.Valid says %v", data, got, want)
		}
		if want {
			checkMembers(t, data)
		}
	})
}

// checkMembers: on valid JSON, walkValid shows the members request.Walk
// shows, in order.
func checkMembers(t *testing.T, data []byte) {
	t.Helper()
	var got, want []string
	walkValid(data, func(k, v []byte) { got = append(got, string(k)+"\x00"+string(v)) })
	request.Walk(data, func(k, v []byte) bool {
		want = append(want, string(k)+"\x00"+string(v))
		return true
	})
	if !slices.Equal(got, want) {
		t.Fatalf("walkValid(%q) shows members %q, request.Walk %q", data, got, want)
	}
}

func BenchmarkValidJSON(b *testing.B) {
	body := []byte(usageChatAnswer)
	b.Run("validJSON", func(b *testing.B) {
		for b.Loop() {
			validJSON(body)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(body)
		}
	})
}
