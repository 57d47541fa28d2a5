package dialect

import "net/http"

// The gateway's side of each dialect. (To be folded into the dialect
// files.)

func (openAI) Traits() Traits { return Traits{System: "openai", KeyHeader: "Authorization"} }
func (anthropic) Traits() Traits {
	return Traits{System: "anthropic", KeyHeader: "X-Api-Key", SettlesUnused: true}
}
func (azure) Traits() Traits { return Traits{System: "azure.ai.openai", KeyHeader: "Api-Key"} }
func (gemini) Traits() Traits {
	return Traits{System: "gcp.gemini", KeyHeader: "X-Goog-Api-Key", StrictEnd: true}
}

func (openAI) Client() Client    { return stubClient{} }
func (anthropic) Client() Client { return stubClient{} }
func (azure) Client() Client     { return stubClient{} }
func (gemini) Client() Client    { return stubClient{} }

type stubClient struct{}

func (stubClient) Key(r *http.Request) string                             { return "" }
func (stubClient) SetKey(r *http.Request, key string)                     {}
func (stubClient) Error(h http.Header, status int, code, m string) []byte { return nil }
func (stubClient) ErrorEvent(code, message string) []byte                 { return nil }
func (stubClient) AsksUsage(r *http.Request) bool                         { return false }
