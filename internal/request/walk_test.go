package request

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// chatAnswer is an OpenAI chat completion, as an answer whose usage the
// dialects read with Walk.
const chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1764547200,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, friend."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`

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
	chatAnswer, chatAnswer + "x", chatAnswer[:len(chatAnswer)-1],
	` [ 1 , {"a":[2,3]} ,"x\"]" , [ ] ,{ }, [[]] ] `, `[{"a":1},{"b":[{"c":2}]}]`, `[null]`, `[ "a" ]`,
	`[1,{"a":[2,]}]`, `[{"a":1}{"b":2}]`, `[[1],[2]`,
	`[{"a":{"b":{"c":1}},"d":2},{"e":3},[{"f":4}],[5,6],{"g":[{"h":7}]},{}]`, // members two and three deep, and not of an object
}

// TestValidAgreesWithEncodingJSON: Valid says what json.Valid says, case
// by case, and Walk shows the members encoding/json reads.
func TestValidAgreesWithEncodingJSON(t *testing.T) {
	valid := 0
	for _, c := range validCases {
		want := json.Valid([]byte(c))
		if got := Valid([]byte(c)); got != want {
			t.Errorf("Valid(%.60q) = %v, json.Valid says %v", c, got, want)
		}
		if got := Elements([]byte(c), func([]byte) bool { return true }); got != want {
			t.Errorf("Elements(%.60q) = %v, json.Valid says %v", c, got, want)
		}
		if want {
			valid++
			checkMembers(t, []byte(c))
			checkElements(t, []byte(c))
		}
	}
	if valid == 0 || valid == len(validCases) {
		t.Fatalf("%d of %d cases valid: the table must hold both kinds", valid, len(validCases))
	}
}

// TestValidAllocatesNothing: a usual answer is checked, and its members
// walked, without allocating.
func TestValidAllocatesNothing(t *testing.T) {
	body := []byte(chatAnswer)
	n := 0
	if a := testing.AllocsPerRun(100, func() { Walk(body, func(k, v []byte) bool { n++; return true }) }); a != 0 {
		t.Errorf("Walk allocates %v times", a)
	}
}

// FuzzValid: on any bytes, Valid agrees with json.Valid, and Walk shows
// the members encoding/json reads. The
// table's deep nestings, tens of KiB, are left to the table test: the
// fuzzer would spend its time minimizing them.
func FuzzValid(f *testing.F) {
	for _, c := range validCases {
		if len(c) <= 1024 {
			f.Add([]byte(c))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := json.Valid(data)
		if got := Valid(data); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", data, got, want)
		}
		if got := Elements(data, func([]byte) bool { return true }); got != want {
			t.Fatalf("Elements(%q) = %v, json.Valid says %v", data, got, want)
		}
		if want {
			checkMembers(t, data)
			checkElements(t, data)
		}
	})
}

// checkMembers: on valid JSON, Walk and members show the members of a
// top-level object that encoding/json's decoder reads, in order: each key
// and its value as written.
func checkMembers(t *testing.T, data []byte) {
	t.Helper()
	var got, want []string
	Walk(data, func(k, v []byte) bool {
		var key string // the key as encoding/json decodes it
		if err := json.Unmarshal([]byte(`"`+string(k)+`"`), &key); err != nil {
			t.Fatalf("Walk(%q) shows a key %q that is no JSON string's contents: %v", data, k, err)
		}
		got = append(got, key+"\x00"+string(v))
		return true
	})
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		if len(got) != 0 {
			t.Fatalf("Walk(%q) shows members %q of a text that is not an object", data, got)
		}
		return
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		want = append(want, tok.(string)+"\x00"+string(v))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Walk(%q) shows members %q, encoding/json %q", data, got, want)
	}
	var fast []string
	Members(data, func(k, v []byte) bool {
		var key string
		json.Unmarshal([]byte(`"`+string(k)+`"`), &key)
		fast = append(fast, key+"\x00"+string(v))
		return true
	})
	if !slices.Equal(fast, want) {
		t.Fatalf("Members(%q) shows %q, encoding/json %q", data, fast, want)
	}
}

// checkElements: on valid JSON, Elements and Items show the elements of
// a top-level array that encoding/json reads into []json.RawMessage, in
// order, as written; and Walk shows none of them as members.
func checkElements(t *testing.T, data []byte) {
	t.Helper()
	var got []string
	Elements(data, func(v []byte) bool {
		got = append(got, string(v))
		return true
	})
	var raws []json.RawMessage
	if json.Unmarshal(data, &raws) != nil {
		if len(got) != 0 {
			t.Fatalf("Elements(%q) shows elements %q of a text that is not an array", data, got)
		}
		return
	}
	var want []string
	for _, r := range raws {
		want = append(want, string(r))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Elements(%q) shows %q, encoding/json %q", data, got, want)
	}
	var items []string
	if !Items(data, func(v []byte) bool { items = append(items, string(v)); return true }) || !slices.Equal(items, want) {
		t.Fatalf("Items(%q) shows %q, encoding/json %q", data, items, want)
	}
	// ItemMembers: each element as Items shows it, after the members
	// of it that Members shows when it is an object.
	var shown, wantShown []string
	if !ItemMembers(data, func(k, v []byte) bool {
		shown = append(shown, "member "+string(k)+"\x00"+string(v))
		return true
	}, func(v []byte) bool {
		shown = append(shown, "element "+string(v))
		return true
	}) {
		t.Fatalf("ItemMembers(%q) refused an array encoding/json reads", data)
	}
	for _, r := range raws {
		Members(r, func(k, v []byte) bool {
			wantShown = append(wantShown, "member "+string(k)+"\x00"+string(v))
			return true
		})
		wantShown = append(wantShown, "element "+string(r))
	}
	if !slices.Equal(shown, wantShown) {
		t.Fatalf("ItemMembers(%q) shows %q, Items then Members %q", data, shown, wantShown)
	}
	Walk(data, func(k, v []byte) bool {
		if data[0] == '[' {
			t.Fatalf("Walk(%q) shows a member %q of an array", data, k)
		}
		return true
	})
}

// TestElementsStops: an element for which the callback returns false is
// the last shown, and Elements returns false.
func TestElementsStops(t *testing.T) {
	var got []string
	valid := Elements([]byte(`[1,[2],3]`), func(v []byte) bool {
		got = append(got, string(v))
		return string(v) != "[2]"
	})
	if valid || !slices.Equal(got, []string{"1", "[2]"}) {
		t.Errorf("Elements stopped at [2]: valid %v, elements %q; want false and 1, [2]", valid, got)
	}
}

// TestWalkStops: a member for which the callback returns false is the
// last shown, and Walk returns false.
func TestWalkStops(t *testing.T) {
	var keys []string
	valid := Walk([]byte(`{"a":1,"b":2,"c":3}`), func(k, _ []byte) bool {
		keys = append(keys, string(k))
		return string(k) != "b"
	})
	if valid || !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("Walk stopped at b: valid %v, keys %q; want false and a, b", valid, keys)
	}
}

func BenchmarkValid(b *testing.B) {
	body := []byte(chatAnswer)
	b.Run("Valid", func(b *testing.B) {
		for b.Loop() {
			Valid(body)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		for b.Loop() {
			json.Valid(body)
		}
	})
}

// TestPlain8: plain8 says what strPlain says of each of eight bytes, for
// every byte value in every position among plain and non-plain others.
func TestPlain8(t *testing.T) {
	for _, filler := range []byte{'a', 0x80, 0xff, '"', 0x1f} {
		for c := range 256 {
			for p := range 8 {
				w := bytes.Repeat([]byte{filler}, 8)
				w[p] = byte(c)
				want := true
				for _, b := range w {
					want = want && strPlain[b]
				}
				if got := plain8(binary.LittleEndian.Uint64(w)); got != want {
					t.Fatalf("plain8(%q) = %v, want %v", w, got, want)
				}
			}
		}
	}
}

// TestPlain: Plain is false exactly when a byte is a quote, a backslash
// or a control character, wherever it stands in the eight-byte steps.
func TestPlain(t *testing.T) {
	for c := range 256 {
		want := c >= 0x20 && c != '"' && c != '\\'
		for n := 1; n <= 19; n++ {
			for at := range n {
				s := bytes.Repeat([]byte{'a'}, n)
				s[at] = byte(c)
				if got := Plain(s); got != want {
					t.Fatalf("Plain(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
	if !Plain(nil) || !Plain([]byte("héllo wörld, plain and long enough")) {
		t.Error("Plain refuses a plain text")
	}
}
