// Package request reads what Sluice needs from an LLM request body in one
// pass without decoding it: Scan gives the top-level "model", "stream",
// "stream_options" and the output limit ("max_tokens" and its other
// names) together; Model, WithModel and Int read or replace one member.
// It also holds the rule every model name from a client must follow
// (CheckModel) and the form in which a name that breaks it may be logged
// (Loggable).
package request
