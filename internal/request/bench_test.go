package request

import (
	"encoding/json"
	"testing"
)

// BenchmarkParse compares the passes over one chat request body (chatBody,
// streaming, with max_tokens) before and after Scan. passes/op counts the
// scans each variant makes over the body.
//
//   - gateway-before: the gateway's check of the model (BodyModel) and its
//     decoding of stream and stream_options (encoding/json) to ask for usage.
//   - request-before: that, then the engine's Model and the spend
//     estimate's Int for each output limit.
//   - scan: Scan, which reads all of it.
func BenchmarkParse(b *testing.B) {
	body := []byte(chatBody)
	b.Run("gateway-before", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			gatewayBefore(body)
		}
		b.ReportMetric(2, "passes/op")
	})
	b.Run("request-before", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			gatewayBefore(body)
			Model(body)
			for _, k := range maxTokenKeys {
				if n, ok := Int(body, k); ok && n > 0 {
					break
				}
			}
		}
		b.ReportMetric(4, "passes/op") // max_tokens is found at the first try
	})
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := Scan(body); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(1, "passes/op")
	})
}

// gatewayBefore is the gateway's parse of a request body before Scan.
func gatewayBefore(body []byte) (ask bool) {
	if _, err := BodyModel(body); err != nil {
		return false
	}
	var req struct {
		Stream        bool            `json:"stream"`
		StreamOptions json.RawMessage `json:"stream_options"`
	}
	return json.Unmarshal(body, &req) == nil && req.Stream && len(req.StreamOptions) == 0
}
