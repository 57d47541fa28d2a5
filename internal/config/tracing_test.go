package config

import (
	"strings"
	"testing"
)

func TestTracingDefaultsOff(t *testing.T) {
	c, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Tracing != (Tracing{SampleRatio: 1}) {
		t.Errorf("default tracing %+v, want off with ratio 1", c.Tracing)
	}
}

func TestTracingParses(t *testing.T) {
	c, err := Parse([]byte("tracing:\n  enabled: true\n  endpoint: http://127.0.0.1:4318/v1/traces\n  sample_ratio: 0.25\n  service_name: edge\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := Tracing{Enabled: true, Endpoint: "http://127.0.0.1:4318/v1/traces", SampleRatio: 0.25, ServiceName: "edge"}
	if c.Tracing != want {
		t.Errorf("tracing %+v, want %+v", c.Tracing, want)
	}
	c, err = Parse([]byte("tracing: {enabled: true}\n")) // the OTEL_* variables say where
	if err != nil || !c.Tracing.Enabled || c.Tracing.Endpoint != "" || c.Tracing.SampleRatio != 1 {
		t.Errorf("enabled alone: %+v, %v", c.Tracing, err)
	}
}

func TestTracingRefused(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"tracing: {endpoint: 127.0.0.1:4318}\n", `tracing.endpoint: "127.0.0.1:4318" is not an http or https URL`},
		{"tracing: {endpoint: ftp://h/v1/traces}\n", "tracing.endpoint: \"ftp://h/v1/traces\" is not an http or https URL"},
		{"tracing: {endpoint: \"http://u:secret@h:4318/v1/traces\"}\n", "tracing.endpoint: a URL with user:password"},
		{"tracing: {sample_ratio: 1.5}\n", "tracing.sample_ratio: 1.5 is not between 0 and 1"},
		{"tracing: {sample_ratio: -0.1}\n", "tracing.sample_ratio: -0.1 is not between 0 and 1"},
		{"tracing: {enabled: yes please}\n", "tracing.enabled:"},
		{"tracing: {sample: 1}\n", "tracing.sample: unknown key (did you mean sample_ratio?)"},
	} {
		_, err := Parse([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: got %v, want %q", tc.src, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: %q is not one line without the secret", tc.src, err)
		}
	}
}
