package fake

import (
	"fmt"
	"net/http"
	"strings"
)

// This file holds Google Vertex AI: POST
// {prefix}/projects/{project}/locations/{region}/publishers/google/models/{model}:generateContent
// (and the other Gemini methods), answered as Gemini, and
// …/publishers/anthropic/models/{model}:rawPredict and :streamRawPredict,
// answered as Anthropic; every call needs a bearer token of the token
// endpoint (googleauth.go).

// vertexAnthropic is Anthropic's messages API on Vertex AI: the model in
// the path, streamed by :streamRawPredict.
type vertexAnthropic struct {
	anthropic
	model  string
	stream bool
}

// fields takes the model from the path; :streamRawPredict streams.
func (v vertexAnthropic) fields(in requestFields, _ []byte) requestFields {
	in.Model, in.Stream = v.model, in.Stream || v.stream
	return in
}

// vertexAnthropicVersion is the anthropic_version a Claude model on
// Vertex AI requires in the body.
const vertexAnthropicVersion = "vertex-2023-10-16"

// checkVertexAnthropic checks a body for a Claude model on Vertex AI
// (Provider.Strict): Anthropic's rules, but with no "model" (the path
// names it) and with "anthropic_version": "vertex-2023-10-16" (in place
// of the anthropic-version header), refused in Anthropic's words.
func checkVertexAnthropic(body []byte) error {
	r, err := object(body, "body")
	if err != nil {
		return err
	}
	v, ok, err := r.str("anthropic_version", "body")
	switch {
	case err != nil:
		return err
	case !ok:
		return fmt.Errorf("anthropic_version: Field required")
	case v != vertexAnthropicVersion:
		return fmt.Errorf("anthropic_version: Input should be '%s'", vertexAnthropicVersion)
	case r.has("model"):
		return fmt.Errorf("model: Extra inputs are not permitted")
	}
	return checkAnthropic(body, false)
}

// vertexDialectFor returns the dialect of a Vertex AI request, or nil: a
// path with projects/{project}/locations/{region}/publishers/{publisher}/
// models/{model}:{method}, after any prefix (/v1/, /v1beta1/), the
// publisher google (Gemini's methods) or anthropic (rawPredict,
// streamRawPredict).
func vertexDialectFor(r *http.Request) dialect {
	p := r.URL.Path
	i := strings.Index(p, "/projects/")
	if i < 0 {
		return nil
	}
	f := strings.Split(p[i+1:], "/")
	if len(f) != 8 || f[0] != "projects" || f[2] != "locations" || f[4] != "publishers" || f[6] != "models" ||
		f[1] == "" || f[3] == "" {
		return nil
	}
	model, method, _ := strings.Cut(f[7], ":")
	if model == "" {
		return nil
	}
	switch f[5] {
	case "google":
		return geminiDialect(p)
	case "anthropic":
		if method == "rawPredict" || method == "streamRawPredict" {
			return vertexAnthropic{model: model, stream: method == "streamRawPredict"}
		}
	}
	return nil
}

// fielded is a dialect that reads what the fake uses of a request from
// more than its body's members: the model or the stream from the path,
// the output limit from a member of its own.
type fielded interface {
	fields(in requestFields, body []byte) requestFields
}

// credentialCheck reports whether a call's credentials are good; if not,
// it has answered the call.
type credentialCheck func(w http.ResponseWriter, r *http.Request, body []byte) bool

// cloudDialectFor returns the dialect of a Bedrock Runtime or Vertex AI
// request and the check of its credentials, or nil.
func (p *Provider) cloudDialectFor(r *http.Request) (dialect, credentialCheck) {
	if d := bedrockDialectFor(r); d != nil {
		return d, p.checkSigned
	}
	if d := vertexDialectFor(r); d != nil {
		return d, func(w http.ResponseWriter, r *http.Request, _ []byte) bool { return p.checkBearer(w, r) }
	}
	return nil, nil
}
