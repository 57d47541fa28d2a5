package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/sluice-llm/sluice/internal/cmdline"
)

// version, when set at build time with -ldflags "-X main.version=v1.2.3",
// replaces the module version read from the build info.
var version = ""

func runVersion(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "-help") && len(args) == 1 {
		fmt.Fprintln(stdout, "Usage: sluice version\n\nPrints the module version, the VCS revision and time it was built from, and whether the tree had local changes.")
		return exitOK
	}
	if len(args) > 0 {
		fmt.Fprintf(stderr, "sluice version: %v\n", cmdline.Unexpected(args, "no arguments"))
		return exitUsage
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintf(stdout, "sluice %s\n", versionLine(version, info, ok))
	return exitOK
}

// versionLine describes the build: "v1.2.0", "(devel) rev 0123abcd4567
// 2026-11-30T18:00:00Z, modified", or, with no VCS stamp, "(devel), no VCS
// revision recorded …". override, when not empty, replaces the module
// version.
func versionLine(override string, info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		if override != "" {
			return override
		}
		return "(unknown): no build information in the binary"
	}
	v := info.Main.Version
	if override != "" {
		v = override
	}
	if v == "" {
		v = "(devel)"
	}
	var rev, at string
	dirty := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		if v == "(devel)" {
			return v + ", no VCS revision recorded (built with -buildvcs=false or outside a git checkout)"
		}
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	parts := []string{"rev " + rev}
	if at != "" {
		parts[0] += " " + at
	}
	if dirty {
		parts = append(parts, "modified")
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}
