package benchproc

import "github.com/sluice-llm/sluice/fake"

// Kind is a fake provider's rate limit as the storm harnesses name it
// (--kind): its request bucket's burst and how its headers tell it.
type Kind struct {
	Burst   int               // fake.Provider.Burst; 0: a minute's worth
	Headers fake.LimitHeaders // fake.Provider.LimitHeaders
}

// Kinds are the named kinds: exact (a bucket of a minute's worth, exact
// headers), quantized (a burst of 10; the headers give the minute's limit
// and what is left of the burst), none (a minute's worth, no rate-limit
// headers: only Retry-After on the 429s) and overstate (a minute's worth,
// the remaining- headers overstated).
var Kinds = map[string]Kind{
	"exact":     {0, fake.LimitHeadersExact},
	"quantized": {10, fake.LimitHeadersExact},
	"none":      {0, fake.LimitHeadersNone},
	"overstate": {0, fake.LimitHeadersOverstate},
}
