package agent

import (
	openai "github.com/sashabaranov/go-openai-extra"
)

// A different library with a function of the same name.
var community = openai.NewClient("sk-test")

type local struct{}

// NewClient is a local function, not an SDK constructor.
func NewClient() local { return local{} }

var mine = NewClient()
