package sluice

import (
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-llm/sluice/dialect/chat"
)

// A provider may declare what its models can take (Transport.Models,
// Target.Models): a target whose model cannot take the request is skipped
// before any call, like a target whose dialect cannot express it
// (translate.go), and for every target that has a declaration: the
// primary, a fallback of the call's dialect and a translated one.

// ModelLimits is what one model, or a family of models, of a provider
// can take, as the operator declares it. The zero value (but Model)
// declares nothing: the model takes every request.
type ModelLimits struct {
	// Model names the models the declaration is of: a model's name, or a
	// name ending in '*' for every model that starts with the rest
	// (gpt-4o*). A model takes the declaration of its own name, else that
	// of the longest such prefix it starts with, whole: declarations are
	// not merged.
	Model string

	// Context is the model's context window, in tokens: a request that
	// holds more, by the estimate of estimateTokens, is skipped. If zero,
	// not declared.
	Context int64

	// Output is the most output tokens the model writes: a request whose
	// max tokens ask for more is skipped. If zero, not declared.
	Output int64

	// Lacks are the features the model cannot take, among those a request
	// may ask (chat.Request.Features): chat.FeatureTools (tool definitions,
	// or tool calls and results in the conversation), chat.FeatureImages,
	// chat.FeatureJSONSchema, …. If empty, none.
	Lacks []chat.Feature
}

// LimitError is why a target's model cannot take a request, by what its
// provider declares of it (ModelLimits): the reason of its skipped line,
// and of a SkippedError.
type LimitError struct {
	// Model is the target's model.
	Model string
	// Lacks is what the request asks that the model cannot take; "" when
	// the request is too large instead.
	Lacks chat.Feature
	// Limit names what the request is too large for: "context" or
	// "output"; "" when the model lacks a feature.
	Limit string
	// Need is the request's size, the tokens it holds at least
	// (context) or the output tokens it asks for (output); Max is the
	// model's, as declared.
	Need, Max int64
}

func (e *LimitError) Error() string {
	if e.Lacks != "" {
		return "sluice: model " + e.Model + " is declared without " + string(e.Lacks)
	}
	need, max := strconv.FormatInt(e.Need, 10), strconv.FormatInt(e.Max, 10)
	if e.Limit == "output" {
		return "sluice: the request asks for up to " + need + " output tokens; model " + e.Model + " is declared to write at most " + max
	}
	return "sluice: the request holds at least " + need + " tokens; model " + e.Model + " is declared with a context of " + max
}

// modelsOf returns the declarations of target i's provider: for the
// primary (0), the Transport's; for Fallbacks[i-1], its own, or the
// Transport's when it names neither its own provider nor declarations.
func (t *Transport) modelsOf(i int) []ModelLimits {
	if i == 0 {
		return t.Models
	}
	tg := &t.Fallbacks[i-1]
	if tg.Models == nil && tg.Provider == "" {
		return t.Models
	}
	return tg.Models
}

// limitsOf returns model's declaration among ms: its own, else the one of
// the longest prefix it starts with; nil when none.
func limitsOf(ms []ModelLimits, model string) *ModelLimits {
	var best *ModelLimits
	for i := range ms {
		m := &ms[i]
		if m.Model == model {
			return m
		}
		if stem, wild := strings.CutSuffix(m.Model, "*"); wild && strings.HasPrefix(model, stem) &&
			(best == nil || len(m.Model) > len(best.Model)) {
			best = m
		}
	}
	return best
}

// fit marks target i, the current one, to be skipped (xlState.skip) when
// its model's declaration says it cannot take the request. A target of
// no declaration costs nothing: the request is read (into the chat
// model, once per call) only for one that has. The primary is checked
// only when a fallback follows it, and not when it is called after all
// (anyway).
func (c *call) fit(i int) {
	ms := c.t.modelsOf(i)
	if len(ms) == 0 || (i == 0 && len(c.t.Fallbacks) == 0) {
		return
	}
	if x := c.xs; x != nil && (x.skip != nil || (i == 0 && x.anyway)) {
		return
	}
	lim := limitsOf(ms, c.model)
	if lim == nil {
		return
	}
	if err := c.beyond(lim); err != nil {
		if c.xs == nil {
			c.xs = &xlState{}
		}
		c.xs.skip = err
		c.xs.limited = c.xs.limited || i == 0
	}
}

// beyond returns why the current target's model, declared lim, cannot
// take the call's request; nil when it can, or when the request cannot
// be read into the chat model (not a chat call, or a dialect translated
// neither way): nothing then says the model cannot take it.
func (c *call) beyond(lim *ModelLimits) error {
	maxTokens := c.in.MaxTokens
	// Every word is a byte of the body at least: a body no longer than the
	// context fits it, whatever its words.
	fits := lim.Context == 0 || int64(len(c.in.Bytes)) <= lim.Context
	if fits && len(lim.Lacks) == 0 && (lim.Output == 0 || maxTokens > 0) {
		return c.overOutput(lim, maxTokens) // no need to read the request
	}
	in, err := c.chatRequest()
	if err != nil {
		return nil
	}
	if maxTokens == 0 {
		maxTokens = in.MaxTokens
	}
	if len(lim.Lacks) > 0 {
		for _, f := range in.Features() {
			if slices.Contains(lim.Lacks, f) {
				return &LimitError{Model: c.model, Lacks: f}
			}
		}
	}
	if err := c.overOutput(lim, maxTokens); err != nil {
		return err
	}
	if !fits {
		if n := estimateTokens(in); n > lim.Context {
			return &LimitError{Model: c.model, Limit: "context", Need: n, Max: lim.Context}
		}
	}
	return nil
}

// overOutput returns why maxTokens, the output tokens the request asks
// for at most, is more than the model declared lim writes; nil when it
// is not, or either is not known.
func (c *call) overOutput(lim *ModelLimits, maxTokens int64) error {
	if lim.Output > 0 && maxTokens > lim.Output {
		return &LimitError{Model: c.model, Limit: "output", Need: maxTokens, Max: lim.Output}
	}
	return nil
}

// anyway aims the call at the primary again, its declared limits set
// aside, when they had it skipped and no target has been called since
// (every fallback skipped, or refused by its breaker), so that the client
// gets the primary's own answer rather than one the gateway makes up;
// false when the call must end.
func (c *call) anyway() bool {
	x := c.xs
	if x == nil || !x.limited || x.anyway || c.sent > 0 || c.timedOut() != nil {
		return false
	}
	x.anyway = true
	c.aim(0)
	return true
}

// estimateTokens returns how many tokens request r holds at least, counted
// without a tokenizer, which no API shares: its words, the runs of bytes
// between ASCII white space, in the system prompt, the messages (text,
// tool calls' names and arguments, tool results), the tools' names,
// descriptions and schemas and the answer's schema. An image counts
// nothing.
//
// A word is a lower bound, not an average. The tokenizers whose rules
// are public (OpenAI's, Llama's and Mistral's byte-level BPE, Gemma's
// SentencePiece) split text at white space before they merge, so no
// token joins two words: English prose holds about 1.3 tokens a word;
// code, JSON and languages written without spaces many more. An average
// such as four bytes a token would be too high for some texts (long
// words, repeated characters) and skip a model that could serve, losing
// a working fallback; the count of words skips only the requests that
// surely do not fit, and leaves the rest to the provider, whose refusal
// (context_length_exceeded, in Retry.FallbackMarkers) moves the call on
// as before. The request's max tokens are not added to it, since not
// every API counts them against the context (Gemini's does not):
// ModelLimits.Output bounds them.
func estimateTokens(r *chat.Request) int64 {
	n := partWords(r.System)
	for _, m := range r.Messages {
		n += partWords(m.Parts)
	}
	for _, t := range r.Tools {
		n += wordsIn(t.Name) + wordsIn(t.Description) + wordsIn(t.Parameters)
	}
	if r.Format != nil {
		n += wordsIn(r.Format.Schema)
	}
	return n
}

// partWords returns the words of parts: their text, tool calls' names and
// arguments, and tool results' parts.
func partWords(parts []chat.Part) int64 {
	var n int64
	for _, p := range parts {
		n += wordsIn(p.Text)
		if tc := p.ToolCall; tc != nil {
			n += wordsIn(tc.Name) + wordsIn(tc.Args)
		}
		if tr := p.ToolResult; tr != nil {
			n += partWords(tr.Content)
		}
	}
	return n
}

// wordsIn returns the number of runs of bytes between ASCII white space in s.
func wordsIn[T ~string | ~[]byte](s T) int64 {
	var n int64
	in := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\r', '\f', '\v':
			in = false
		default:
			if !in {
				n++
			}
			in = true
		}
	}
	return n
}
