package dialect

import "net/http"

// Usage, as each dialect reports it. (To be folded into the dialect files.)

func (openAI) Usage(body []byte) (Usage, bool)    { return Usage{}, false }
func (anthropic) Usage(body []byte) (Usage, bool) { return Usage{}, false }
func (azure) Usage(body []byte) (Usage, bool)     { return Usage{}, false }
func (gemini) Usage(body []byte) (Usage, bool)    { return Usage{}, false }

func (openAI) StreamUsage() UsageReader    { return nil }
func (anthropic) StreamUsage() UsageReader { return nil }
func (azure) StreamUsage() UsageReader     { return nil }
func (gemini) StreamUsage() UsageReader    { return nil }

var _ = http.StatusOK
