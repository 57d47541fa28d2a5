package dialecttest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/awsevent"
)

// Bedrock is AWS Bedrock Runtime's Converse API: the model in the path
// (/model/{id}/converse, /converse-stream), a stream of AWS event-stream
// frames whole at its metadata event, errors as {"message"} with their
// type in x-amzn-ErrorType (in a stream, an exception frame); the gateway
// signs each call with its own credentials (SigV4), the client's dropped.
var Bedrock = Speaker{
	Kind:     "bedrock",
	Model:    "anthropic.claude-3-haiku-20240307-v1:0",
	Fallback: "anthropic.claude-3-5-sonnet-20240620-v1:0",
	Call: func(model string, stream bool) Call {
		op := "/converse"
		if stream {
			op = "/converse-stream"
		}
		return Call{Path: "/model/" + model + op, Body: `{"messages":[{"role":"user","content":[{"text":"hi"}]}],` +
			`"inferenceConfig":{"maxTokens":` + strconv.Itoa(MaxTokens) + `}}`}
	},
	Scripts: Scripts{
		Retryable:       "503",
		Invalid:         "400",
		Quota:           "429:insufficient_quota", // ServiceQuotaExceededException
		Cut:             "stream:cut-after=3",     // messageStart, then two pieces
		Stall:           "stream:stall-after=3",
		FirstEventError: "overloaded", // a serviceUnavailableException frame
	},
	InvalidType: "", // the type is in the x-amzn-ErrorType header, not in the body
	Answer:      bedrockAnswer,
	Stream:      bedrockStream,
	Error:       bedrockError,
	Quota: func(body []byte) bool {
		e, err := bedrockError(body)
		return err == nil && e.Message == "Your request exceeds the service quota for your account."
	},
	ModelOf: func(r fake.Request) string {
		p, ok := strings.CutPrefix(r.Path, "/model/")
		if i := strings.LastIndexByte(p, '/'); ok && i > 0 {
			return p[:i]
		}
		return ""
	},
	Prepare: func(t testing.TB, up *fake.Server) Upstream {
		// The AWS credential chain reads the process's environment.
		dir := t.TempDir()
		env := map[string]string{
			"AWS_ACCESS_KEY_ID":           fake.DefaultAWS.AccessKeyID,
			"AWS_SECRET_ACCESS_KEY":       fake.DefaultAWS.SecretAccessKey,
			"AWS_SESSION_TOKEN":           "",
			"AWS_PROFILE":                 "",
			"AWS_REGION":                  "",
			"AWS_CA_BUNDLE":               "",
			"AWS_EC2_METADATA_DISABLED":   "true",
			"AWS_CONFIG_FILE":             dir + "/config",
			"AWS_SHARED_CREDENTIALS_FILE": dir + "/credentials",
		}
		for k, v := range env {
			t.Setenv(k, v)
		}
		return Upstream{Region: fake.DefaultAWS.Region, Env: env}
	},
}

// bedrockAnswer reads a Converse answer.
func bedrockAnswer(body []byte) (Answer, error) {
	var v struct {
		Output struct {
			Message *struct {
				Content []struct{ Text string }
			}
		}
		Usage struct{ InputTokens, OutputTokens int64 }
	}
	if err := decode(body, &v, "a Converse answer"); err != nil {
		return Answer{}, err
	}
	if v.Output.Message == nil {
		return Answer{}, errNotA("Converse answer", body)
	}
	a := Answer{Input: v.Usage.InputTokens, Output: v.Usage.OutputTokens}
	for _, c := range v.Output.Message.Content {
		a.Text += c.Text
	}
	return a, nil
}

// bedrockStream reads ConverseStream's frames, whole or cut.
func bedrockStream(body []byte) (Stream, error) {
	var s Stream
	r := awsevent.NewReader(bytes.NewReader(body))
	for {
		f, err := r.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		s.Events++
		s.Err = nil
		switch {
		case f.Type == awsevent.Exception || f.Type == awsevent.Error:
			s.Errors++
			e, err := bedrockError(f.Payload)
			if f.Type == awsevent.Error {
				e, err = Error{Message: string(f.Payload)}, nil
			}
			if err != nil {
				return s, err
			}
			e.Type = f.Name
			s.Err = &e
		case f.Name == "metadata":
			s.End = true
		case f.Name == "contentBlockDelta":
			var d struct{ Delta struct{ Text string } }
			if err := decode(f.Payload, &d, "a contentBlockDelta"); err != nil {
				return s, err
			}
			if d.Delta.Text != "" {
				s.Pieces = append(s.Pieces, d.Delta.Text)
			}
		}
	}
}

// bedrockError reads Bedrock's {"message"}, with the gateway's code in
// reason when the gateway made it.
func bedrockError(body []byte) (Error, error) {
	var v struct {
		Message string `json:"message"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return Error{}, errNotA("Bedrock error", body)
	}
	if v.Message == "" {
		return Error{}, errNoMessage
	}
	return Error{Code: v.Reason, Message: v.Message}, nil
}
