package cmdline

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sluice-llm/sluice/internal/config"
)

// ConfigHelp is the help of every command's --config flag, after what
// the command reads of the config.
const ConfigHelp = " (default $" + config.EnvConfig + ", else the built-in defaults)"

// ConfigFlag defines --config on fs, the way every command takes it: what
// says what the command reads of the file ("config file whose state store
// to read").
func ConfigFlag(fs *flag.FlagSet, what string) *string {
	return fs.String("config", "", what+ConfigHelp)
}

// Source is the config a command reads, and what named it: the --config
// flag, else $SLUICE_CONFIG, else nothing (the built-in defaults). It is
// the rule of sluice serve, so that every tool reads what the gateway
// reads.
type Source struct {
	// Path is the config file; "" for the built-in defaults.
	Path string
	// FromEnv is true when $SLUICE_CONFIG named Path, not --config.
	FromEnv bool
}

// LocateConfig returns the config the --config flag's value names, else
// the one $SLUICE_CONFIG names, else the built-in defaults.
func LocateConfig(flagValue string) Source {
	if flagValue != "" {
		return Source{Path: flagValue}
	}
	if p := os.Getenv(config.EnvConfig); p != "" {
		return Source{Path: p, FromEnv: true}
	}
	return Source{}
}

// Load loads and parses the config (the built-in defaults when Path is
// empty). Its errors name the file and line.
func (s Source) Load() (*config.Config, error) {
	return config.Load(s.Path)
}

// String says where the config came from, for a person: "config
// /etc/sluice.yaml", "config /etc/sluice.yaml, named by $SLUICE_CONFIG", or
// "no --config and no $SLUICE_CONFIG: the built-in defaults".
func (s Source) String() string {
	switch {
	case s.Path == "":
		return "no --config and no $" + config.EnvConfig + ": the built-in defaults"
	case s.FromEnv:
		return "config " + s.Path + ", named by $" + config.EnvConfig
	}
	return "config " + s.Path
}

// Reading writes the one line, to w (a command's standard error), that
// says what a command reads and why: "sluice report: reading
// /var/lib/sluice/attempts.jsonl (config /etc/sluice.yaml)". from says
// where the choice came from: a Source, or the flag that named what is read.
func Reading(w io.Writer, command, what string, from fmt.Stringer) {
	fmt.Fprintf(w, "%s: reading %s (%s)\n", command, what, from)
}

// Named is a choice made by a flag other than --config, for Reading:
// Named("--state") says "--state".
type Named string

// String returns the flag's name.
func (n Named) String() string { return string(n) }
