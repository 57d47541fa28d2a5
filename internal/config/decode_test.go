package config

import (
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"
)

// fileKeys returns the key paths of the file, by the fields of t and of the
// types it holds; NAME stands for a name the operator chooses, [] for a
// list's item. It fails t when a field's type is not one a value decodes to.
func fileKeys(tb testing.TB, t reflect.Type, inner map[string]slot, path string) []string {
	var out []string
	ks := keys(reflect.New(t).Elem())
	for k, s := range inner {
		ks[k] = s
	}
	for _, k := range slices.Sorted(maps.Keys(ks)) {
		s, p := ks[k], key(path, k)
		out = append(out, p)
		ft := s.v.Type()
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case has(s.opts, "per_minute"), has(s.opts, "text"):
		case ft.Kind() == reflect.Struct:
			out = append(out, fileKeys(tb, ft, s.inner, p)...)
		case ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.Struct:
			out = append(out, fileKeys(tb, ft.Elem(), nil, p+".NAME")...)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			out = append(out, fileKeys(tb, ft.Elem(), nil, p+"[]")...)
		case ft.Kind() == reflect.Slice:
			if !scalarType(ft.Elem()) {
				tb.Errorf("%s: a list of %v, which no value decodes to", p, ft.Elem())
			}
		case !scalarType(ft):
			tb.Errorf("%s: a %v, which no value decodes to; give the field a tag or a foreign entry", p, ft)
		}
	}
	return out
}

func scalarType(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.String, reflect.Bool, reflect.Float64, reflect.Int, reflect.Int64:
		return true
	}
	return t == reflect.TypeFor[time.Duration]()
}

// TestEveryKeyDecodesAndIsDocumented: every field of Config, and of the
// engine's types it holds, is a key whose value decodes, and CONFIG.md,
// the operator's reference, names it. A field added to sluice.Policy, say,
// becomes a key of every policy: this fails until CONFIG.md names it (or
// foreign says "-").
func TestEveryKeyDecodesAndIsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	all := fileKeys(t, reflect.TypeFor[Config](), nil, "")
	if len(all) < 80 {
		t.Fatalf("only %d keys: %q", len(all), all)
	}
	for _, p := range all {
		k := regexp.MustCompile(`[A-Za-z_]+$`).FindString(p)
		if !regexp.MustCompile(`\b` + k + `\b`).Match(doc) {
			t.Errorf("%s: CONFIG.md does not name %s", p, k)
		}
	}
}

// TestSnake: the key of an engine type's field is its name in snake_case.
func TestSnake(t *testing.T) {
	for in, want := range map[string]string{
		"Total": "total", "FirstByte": "first_byte", "MaxRetryAfter": "max_retry_after",
		"LimitUSD": "limit_usd", "APIKeyEnv": "api_key_env", "BaseURL": "base_url", "TTL": "ttl",
	} {
		if got := snake(in); got != want {
			t.Errorf("snake(%q) = %q, want %q", in, got, want)
		}
	}
}
