package dialecttest

import (
	"strconv"
	"strings"

	"github.com/sluice-llm/sluice/fake"
)

// Gemini is Google's Gemini API: the model and the stream in the path
// (…/models/M:streamGenerateContent?alt=sse), a stream of data chunks with
// no terminal event but a chunk with a finishReason, errors as google.rpc
// statuses (the gateway's with an ErrorInfo naming its code), a used-up
// quota as a 429 whose QuotaFailure names a per-day quota, the key in
// x-goog-api-key.
var Gemini = Speaker{
	Kind:     "gemini",
	Model:    "gemini-test",
	Fallback: "gemini-backup",
	Call: func(model string, stream bool) Call {
		c := Call{Path: geminiModels + model + ":generateContent",
			Body: `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":` +
				strconv.Itoa(MaxTokens) + `}}`}
		if stream {
			c.Path = geminiModels + model + ":streamGenerateContent?alt=sse"
		}
		return c
	},
	KeyHeader: "X-Goog-Api-Key",
	Scripts: Scripts{
		Retryable:       "503",
		Invalid:         "400",
		Quota:           "429:insufficient_quota",
		Cut:             "stream:cut-after=2", // two chunks, a piece each
		Stall:           "stream:stall-after=2",
		FirstEventError: "overloaded",
	},
	InvalidType: "INVALID_ARGUMENT",
	Answer:      geminiAnswer,
	Stream:      geminiStream,
	Error:       func(body []byte) (Error, error) { e, _, err := geminiError(body); return e, err },
	Quota: func(body []byte) bool {
		e, perDay, err := geminiError(body)
		return err == nil && e.Status == 429 && e.Type == "RESOURCE_EXHAUSTED" && perDay
	},
	ModelOf: func(r fake.Request) string {
		rest, ok := strings.CutPrefix(r.Path, geminiModels)
		m, _, named := strings.Cut(rest, ":")
		if !ok || !named {
			return ""
		}
		return m
	},
}

// geminiModels is the path under which the Gemini API names the model.
const geminiModels = "/v1beta/models/"

// geminiChunk is a GenerateContentResponse, whole or one chunk of a stream.
type geminiChunk struct {
	Candidates []struct {
		Content      struct{ Parts []struct{ Text string } }
		FinishReason string
	}
	ModelVersion  string
	UsageMetadata struct {
		PromptTokenCount     int64
		CandidatesTokenCount int64
	}
}

func (c geminiChunk) text() (pieces []string, finished bool) {
	for _, cand := range c.Candidates {
		for _, p := range cand.Content.Parts {
			if p.Text != "" {
				pieces = append(pieces, p.Text)
			}
		}
		finished = finished || cand.FinishReason != ""
	}
	return pieces, finished
}

// geminiAnswer reads a GenerateContentResponse.
func geminiAnswer(body []byte) (Answer, error) {
	var c geminiChunk
	if err := decode(body, &c, "a Gemini answer"); err != nil {
		return Answer{}, err
	}
	if len(c.Candidates) == 0 {
		return Answer{}, errNotA("Gemini answer", body)
	}
	pieces, _ := c.text()
	return Answer{Text: strings.Join(pieces, ""), Model: c.ModelVersion,
		Input: c.UsageMetadata.PromptTokenCount, Output: c.UsageMetadata.CandidatesTokenCount}, nil
}

// geminiStream reads a stream of GenerateContentResponse chunks.
func geminiStream(body []byte) (Stream, error) {
	var s Stream
	evs := sseEvents(body)
	for i, ev := range evs {
		s.Events++
		if isErrorData(ev.data) {
			s.Errors++
			if i == len(evs)-1 {
				e, _, err := geminiError(ev.data)
				if err != nil {
					return s, err
				}
				s.Err = &e
			}
			continue
		}
		var c geminiChunk
		if err := decode(ev.data, &c, "a Gemini chunk"); err != nil {
			return s, err
		}
		pieces, finished := c.text()
		s.Pieces = append(s.Pieces, pieces...)
		s.End = s.End || finished
	}
	return s, nil
}

// geminiError reads {"error":{"code","message","status","details"}}: the
// code of an ErrorInfo's reason, and whether a QuotaFailure names a
// per-day quota.
func geminiError(body []byte) (e Error, perDay bool, err error) {
	var v struct {
		Error *struct {
			Code    int
			Message string
			Status  string
			Details []struct {
				Type       string `json:"@type"`
				Reason     string
				Violations []struct{ QuotaID string }
			}
		}
	}
	if err := decode(body, &v, "a Google error"); err != nil {
		return Error{}, false, err
	}
	if v.Error == nil || v.Error.Message == "" {
		return Error{}, false, errNoMessage
	}
	e = Error{Type: v.Error.Status, Status: v.Error.Code, Message: v.Error.Message}
	for _, d := range v.Error.Details {
		switch d.Type {
		case "type.googleapis.com/google.rpc.ErrorInfo":
			e.Code = d.Reason
		case "type.googleapis.com/google.rpc.QuotaFailure":
			for _, q := range d.Violations {
				perDay = perDay || strings.Contains(q.QuotaID, "PerDay")
			}
		}
	}
	return e, perDay, nil
}
