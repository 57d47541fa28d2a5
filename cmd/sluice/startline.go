package main

import (
	"github.com/sluice-llm/sluice/internal/config"
)

// stateWhere says where the config's state goes, for the start line:
// "memory", "file:/var/lib/sluice", "redis://host:6379/0" with any
// password left out, "redis-sentinel master=NAME sentinels=ADDR,…" or
// "redis-cluster nodes=ADDR,…" (config.Config.StateWhere).
func stateWhere(cfg *config.Config) string { return cfg.StateWhere() }

// attemptsWhere says where the attempt log goes: a path, or "stdout".
func attemptsWhere(cfg *config.Config) string {
	p, err := cfg.AttemptsPath()
	switch {
	case err != nil:
		return "unknown: " + err.Error()
	case p == "-":
		return "stdout"
	}
	return p
}
