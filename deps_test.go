package sluice

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// module is this module's path: its packages are not outside it.
const module = "github.com/sluice-llm/sluice"

// beyondStd are the packages outside the standard library and this
// module that the engine may import, each with why. golang.org/x/sys/unix
// maps a state file over a page of a region reserved beforehand
// (MAP_FIXED, state/file_unix.go), which the standard library's
// syscall.Mmap cannot: it takes no address.
var beyondStd = []string{"golang.org/x/sys/unix"}

// The engine, and breaker, import only the standard library and this
// module's own packages (and beyondStd): a program that calls one provider
// through the library compiles no cloud SDK. A dialect's Signer that
// needs one lives in a package of its own (dialect/awssign,
// dialect/googleauth).
func TestStandardLibraryOnly(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, pkg := range []string{".", "./breaker"} {
		// Each package outside the standard library, then its imports.
		out, err := exec.CommandContext(ctx, "go", "list", "-deps",
			"-f", "{{if not .Standard}}{{.ImportPath}}{{range .Imports}} {{.}}{{end}}{{end}}", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		importers := map[string][]string{} // by package imported
		var outside []string
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			for _, imp := range f[1:] {
				importers[imp] = append(importers[imp], f[0])
			}
			if p := f[0]; p != module && !strings.HasPrefix(p, module+"/") && !slices.Contains(beyondStd, p) {
				outside = append(outside, p)
			}
		}
		for _, p := range outside {
			t.Errorf("%s imports %s (through %s), which is neither the standard library nor this module",
				pkg, p, strings.Join(importers[p], ", "))
		}
	}
}
