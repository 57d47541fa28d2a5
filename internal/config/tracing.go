package config

import "net/url"

// Tracing says whether and where the gateway sends OpenTelemetry traces,
// over OTLP/HTTP.
type Tracing struct {
	// Enabled turns tracing on. Default false.
	Enabled bool `yaml:"enabled"`

	// Endpoint is the OTLP/HTTP traces URL. If empty, the standard
	// OTEL_EXPORTER_OTLP_* variables say.
	Endpoint string `yaml:"endpoint"`

	// SampleRatio is the share of new traces recorded, 0 to 1. Default 1.
	SampleRatio float64 `yaml:"sample_ratio"`

	// ServiceName is the traces' service.name. If empty,
	// OTEL_SERVICE_NAME, else "sluice".
	ServiceName string `yaml:"service_name"`
}

func (c *Config) checkTracing() error {
	t := c.Tracing
	u, err := url.Parse(t.Endpoint)
	switch {
	case t.Endpoint != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == ""):
		return errf("tracing.endpoint", "%s is not an http or https URL (write e.g. http://127.0.0.1:4318/v1/traces)", quote(t.Endpoint))
	case t.Endpoint != "" && u.User != nil:
		return errf("tracing.endpoint", "a URL with user:password keeps a credential in the config; send it in OTEL_EXPORTER_OTLP_HEADERS instead")
	case !(t.SampleRatio >= 0 && t.SampleRatio <= 1):
		return errf("tracing.sample_ratio", "%v is not between 0 and 1 (write e.g. 1 to trace every call, 0.1 for one in ten)", t.SampleRatio)
	}
	return nil
}
