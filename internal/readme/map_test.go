package readme

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// module is the module path, cut from every package's import path: the
// root package is named "sluice", every other by its directory.
const module = "github.com/sluice-llm/sluice"

// packages returns every package of the module as `go list ./...` lists
// them, each with what it imports from the module, both by short name.
func packages(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root(t)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list ./...: %v", err)
	}
	pkgs := make(map[string][]string)
	for l := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		var imports []string
		for _, imp := range f[1:] {
			if n, ok := shortName(imp); ok {
				imports = append(imports, n)
			}
		}
		n, _ := shortName(f[0])
		slices.Sort(imports)
		pkgs[n] = imports
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list ./... lists %d packages; the parse went wrong", len(pkgs))
	}
	return pkgs
}

// shortName returns a package's name on the map: "sluice" for the root,
// else its directory; false for a package outside the module.
func shortName(importPath string) (string, bool) {
	if importPath == module {
		return "sluice", true
	}
	rest, ok := strings.CutPrefix(importPath, module+"/")
	return rest, ok
}

// mapRow is one row of a package table of ARCHITECTURE.md.
type mapRow struct {
	line    int      // from 1
	pkg     string   // the first cell's name
	imports []string // the names of the third cell, sorted
}

var codeRE = regexp.MustCompile("`([^`]+)`")

// mapRows returns the rows of every table of ARCHITECTURE.md whose header
// is "| package | what it owns | imports from the module |".
func mapRows(t *testing.T) []mapRow {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	var rows []mapRow
	in := false
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "| package | what it owns | imports from the module |"):
			in = true
		case !in || strings.HasPrefix(l, "|---"):
		case !strings.HasPrefix(l, "|"):
			in = false
		default:
			cells := strings.Split(strings.Trim(l, "|"), " | ")
			if len(cells) != 3 {
				t.Errorf("ARCHITECTURE.md:%d: a row of the package table has %d cells, not 3 (a | inside a cell?)", i+1, len(cells))
				continue
			}
			name := codeRE.FindStringSubmatch(cells[0])
			if name == nil {
				t.Errorf("ARCHITECTURE.md:%d: the row names no package in `backquotes`", i+1)
				continue
			}
			r := mapRow{line: i + 1, pkg: name[1]}
			for _, m := range codeRE.FindAllStringSubmatch(cells[2], -1) {
				r.imports = append(r.imports, m[1])
			}
			slices.Sort(r.imports)
			rows = append(rows, r)
		}
	}
	if len(rows) < 20 {
		t.Fatalf("ARCHITECTURE.md: %d rows in its package tables; the parse went wrong", len(rows))
	}
	return rows
}

// TestArchitectureMapsEveryPackage checks ARCHITECTURE.md's package tables
// against `go list ./...`: every package has one row, every row names a
// package that exists, and each row's imports are what the package
// imports from the module. The bench/ programs and scripts/testsummary
// are on the map too, in a table of their own.
func TestArchitectureMapsEveryPackage(t *testing.T) {
	pkgs := packages(t)
	seen := make(map[string]int)
	for _, r := range mapRows(t) {
		if prev, ok := seen[r.pkg]; ok {
			t.Errorf("ARCHITECTURE.md:%d: package %s has a row already, at line %d", r.line, r.pkg, prev)
			continue
		}
		seen[r.pkg] = r.line
		want, ok := pkgs[r.pkg]
		if !ok {
			t.Errorf("ARCHITECTURE.md:%d: package %s is in the table but not in `go list ./...`: remove its row, or rename it", r.line, r.pkg)
			continue
		}
		if !slices.Equal(r.imports, want) {
			t.Errorf("ARCHITECTURE.md:%d: package %s imports from the module %s, not %s: correct the row's third cell",
				r.line, r.pkg, cellOf(want), cellOf(r.imports))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(pkgs)) {
		if _, ok := seen[p]; !ok {
			t.Errorf("ARCHITECTURE.md: package %s (go list ./...) is not on the map: add a row to the package table:\n| `%s` | what it owns | %s |",
				p, p, cellOf(pkgs[p]))
		}
	}
}

// cellOf writes names as the third cell of a row does.
func cellOf(names []string) string {
	if len(names) == 0 {
		return "—"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

// TestLayoutNamesEveryPackage checks that the README's Layout names every
// package of the module (bench/ and scripts/ stand for the programs under
// them, which ARCHITECTURE.md lists one by one); checkLayout checks that
// each directory it names exists.
func TestLayoutNamesEveryPackage(t *testing.T) {
	var layout *block
	for _, b := range readmeBlocks(t) {
		if strings.Contains(b.text, "sluice (root)") {
			layout = &b
		}
	}
	if layout == nil {
		t.Fatal("README.md: no Layout block (one that holds \"sluice (root)\")")
	}
	named := map[string]bool{"sluice": true}
	for _, l := range strings.Split(layout.text, "\n") {
		for _, w := range strings.Fields(l) {
			if !layoutDirRE.MatchString(w) {
				break
			}
			named[strings.TrimSuffix(w, "/")] = true
		}
	}
	for _, p := range slices.Sorted(maps.Keys(packages(t))) {
		if strings.HasPrefix(p, "bench/") || strings.HasPrefix(p, "scripts/") {
			continue
		}
		if !named[p] {
			t.Errorf("README.md:%d: the Layout does not name package %s/: add a line for it", layout.line, p)
		}
	}
}

var layoutDirRE = regexp.MustCompile(`^[a-z][a-z0-9/]*/$`)
