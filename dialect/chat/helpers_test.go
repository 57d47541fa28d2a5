package chat

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// codecs are every Codec, by name.
var codecs = map[string]Codec{"openai": OpenAI, "anthropic": Anthropic, "gemini": Gemini, "bedrock": Bedrock}

// codecNames are the codecs' names in a fixed order.
var codecNames = []string{"openai", "anthropic", "gemini", "bedrock"}

// pathModel reports whether a codec's API names the model and the
// stream in the path, not the body.
func pathModel(name string) bool { return name == "gemini" || name == "bedrock" }

// jsonEqual reports whether a and b are the same JSON value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// indent returns b indented, or as it is when it is not JSON.
func indent(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// checkJSON fails t when got is not the JSON value want.
func checkJSON(t *testing.T, what string, got []byte, want string) {
	t.Helper()
	if !jsonEqual(got, []byte(want)) {
		t.Errorf("%s:\n got %s\nwant %s", what, indent(got), indent([]byte(want)))
	}
}

// modelJSON writes a model value as JSON, to compare two values whose raw
// JSON members may differ in space alone.
func modelJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return b
}

// checkModel fails t when got and want are not the same model value.
func checkModel(t *testing.T, what string, got, want any) {
	t.Helper()
	g, w := modelJSON(t, got), modelJSON(t, want)
	if !jsonEqual(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, indent(g), indent(w))
	}
}

// checkErr fails t unless err is an error whose message holds want.
func checkErr(t *testing.T, what string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: error %v, want one saying %q", what, err, want)
	}
}

// isErrWant reports whether a golden is an expected error ("error: …"),
// and its text.
func isErrWant(g string) (string, bool) { return strings.CutPrefix(g, "error: ") }

func ptr[T any](v T) *T { return &v }
