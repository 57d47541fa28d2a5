package config

// GeminiBaseURL is the address of Google's Gemini API, the base_url of a
// provider named gemini that gives none.
const GeminiBaseURL = "https://generativelanguage.googleapis.com"

// presetProviders are the providers a provider entry of the same name
// takes its missing fields from: the built-in ones (openai, anthropic),
// and gemini, which is not built in (the default config has no /gemini
// route) but needs no more than its name:
//
//	providers:
//	  gemini: {api_key_env: GEMINI_API_KEY}
func presetProviders() map[string]Provider {
	p := defaultProviders()
	p["gemini"] = Provider{Kind: KindGemini, BaseURL: GeminiBaseURL, MaxConcurrent: DefaultMaxConcurrent}
	return p
}
