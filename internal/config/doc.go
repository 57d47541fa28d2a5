// Package config reads the YAML config of the gateway (sluice serve) into
// a typed Config, fills in the defaults and refuses mistakes with one
// clear line.
//
// CONFIG.md, at the root of the repository, is the operator's reference:
// which file is read, how it combines with the defaults, and every key
// with its default and meaning. A key of the file is a field of Config or
// of a type it holds, named by its yaml tag (an engine type's field, by
// its name in snake_case); a test fails until CONFIG.md names it.
//
// Load reads a file (cmdline.LocateConfig says which) and Parse parses
// bytes over Default. A refusal is an *Error: one line that starts with
// "config: " and names the key path, the problem, the fix and the line:
//
//	config: policies.interactive.retry.max_atempts: unknown key (did you mean max_attempts?) at line 7
//
// Config.Warnings lists what is allowed but likely a mistake.
package config
