// Package request reads what Sluice needs from an LLM request body in one
// pass without decoding it: the top-level "model" (Model, WithModel) and
// integers such as "max_tokens" (Int). It also holds the rule every model
// name from a client must follow (CheckModel) and the form in which a name
// that breaks it may be logged (Loggable).
package request
