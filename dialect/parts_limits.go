package dialect

import (
	"net/http"
	"time"
)

// Rate-limit windows, as each dialect's headers report them. (To be
// folded into the dialect files.)

func (openAI) Windows(h http.Header, now time.Time, fn func(Window))    {}
func (anthropic) Windows(h http.Header, now time.Time, fn func(Window)) {}
func (azure) Windows(h http.Header, now time.Time, fn func(Window))     {}
func (gemini) Windows(h http.Header, now time.Time, fn func(Window))    {}
