// Package cmdline reads the command lines of sluice's subcommands: flags
// and positional arguments in any order, as people type them.
//
// Go's flag package stops at the first positional argument, so that
// "sluice breakers reset NAME --config F" would leave "--config F" unread.
// Parse reads every flag wherever it stands and hands back the positional
// arguments; the caller then refuses any it does not use.
//
// Every command that reads the config, its state or its attempt log finds
// the config as sluice serve does (LocateConfig: --config, else
// $SLUICE_CONFIG, else the built-in defaults) and says on stderr what it
// read and why (Reading), so that a tool never silently reads another
// store or log than the gateway's.
package cmdline

import (
	"flag"
	"fmt"
	"strings"
)

// Parse parses the flags of args with fs and returns the other arguments,
// the positional ones, in their order. Flags and positional arguments may
// interleave: "reset NAME --config F" and "--config F reset NAME" read the
// same. A flag's value may follow it ("--config F") or be joined with "="
// ("--config=F"); a bool flag takes no separate value. "--" ends the
// flags: every argument after it is positional, even one starting with
// "-". A lone "-" is positional (it names standard input).
//
// Parse returns flag.ErrHelp for -h, -help or --help (unless fs defines
// them), and otherwise the flag package's error for an unknown flag, a
// missing value or a bad one. fs's ErrorHandling and output are used as
// set.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var flags, pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			pos = append(pos, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			pos = append(pos, a)
			continue
		}
		flags = append(flags, a)
		if takesValue(fs, a) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	if err := fs.Parse(flags); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 { // cannot happen: every argument given to Parse was a flag or a value
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return pos, nil
}

// takesValue reports whether the flag argument a ("-name" or "--name")
// reads the next argument as its value: a defined flag that is not a bool
// and has no "=value" of its own.
func takesValue(fs *flag.FlagSet, a string) bool {
	name := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
	if strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(name)
	if f == nil {
		return false
	}
	if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
		return false
	}
	return true
}

// Unexpected returns the error for positional arguments a command does not
// use: "unexpected argument "x" (want: USAGE)". want says what the command
// takes, e.g. "flags only" or "reset NAME".
func Unexpected(extra []string, want string) error {
	if len(extra) == 1 {
		return fmt.Errorf("unexpected argument %q (want %s)", extra[0], want)
	}
	return fmt.Errorf("unexpected arguments %q (want %s)", extra, want)
}
