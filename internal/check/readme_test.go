package check

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readme returns the repository's README.md.
func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestREADMECheckCommand: the command the README says passes the shipped
// units passes them, all three.
func TestREADMECheckCommand(t *testing.T) {
	m := regexp.MustCompile("`sluice check ([^`]*)` passes all three").FindStringSubmatch(readme(t))
	if m == nil {
		t.Fatal("README names no `sluice check …` that passes all three shipped units")
	}
	var args []string
	for _, a := range strings.Fields(m[1]) {
		if strings.HasPrefix(a, "deploy/") {
			a = "../../" + a
		}
		args = append(args, a)
	}
	code, out, errOut := runCheck(t, args...)
	if code != exitClean || errOut != "" || !strings.Contains(out, "sluice check: clean (3 units)") {
		t.Errorf("README's sluice check %s: exit %d, want 0 and clean for 3 units\n%s%s", m[1], code, out, errOut)
	}
}

// TestREADMEStopTimeout: the README gives the gateway unit's TimeoutStopSec
// as the unit sets it.
func TestREADMEStopTimeout(t *testing.T) {
	unit, err := os.ReadFile("../../deploy/systemd/sluice.service")
	if err != nil {
		t.Fatal(err)
	}
	set := regexp.MustCompile(`(?m)^TimeoutStopSec=(\S+)$`).FindStringSubmatch(string(unit))
	said := regexp.MustCompile("`TimeoutStopSec=([^`]+)`").FindAllStringSubmatch(readme(t), -1)
	if set == nil || len(said) == 0 {
		t.Fatalf("unit sets %q, README says %q", set, said)
	}
	for _, s := range said {
		if s[1] != set[1] {
			t.Errorf("README says TimeoutStopSec=%s, the unit sets %s", s[1], set[1])
		}
	}
}

// TestArtifactsWhereREADMESays: scripts/test hands go test the output
// directory the README names, and go test keeps a test's artifacts below
// its _artifacts/ there, where the README says to look.
func TestArtifactsWhereREADMESays(t *testing.T) {
	if !strings.Contains(readme(t), "kept below `.artifacts/_artifacts/`") {
		t.Error("README does not say the artifacts are kept below .artifacts/_artifacts/")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}

	// scripts/test, with a go that only says what it was asked.
	stub := t.TempDir()
	if err := os.WriteFile(filepath.Join(stub, "go"), []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, filepath.Join(root, "scripts", "test"), "-run", "X")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PATH="+stub+string(os.PathListSeparator)+os.Getenv("PATH"), "SLUICE_ARTIFACTS=", "SLUICE_TEST_INSTALL=0")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/test: %v", err)
	}
	want := "-artifacts -outputdir " + filepath.Join(root, ".artifacts") + " -run X ./..."
	if !strings.Contains(string(out), want) {
		t.Errorf("scripts/test ran go %s; want it to hold %q", out, want)
	}

	// go test -artifacts -outputdir DIR on a test that keeps a file.
	mod := t.TempDir()
	files := map[string]string{
		"go.mod": "module example.com/shot\n\ngo 1.26\n",
		"shot/shot_test.go": "package shot\n\nimport (\n\t\"os\"\n\t\"path/filepath\"\n\t\"testing\"\n)\n\n" +
			"func TestShot(t *testing.T) {\n\tos.WriteFile(filepath.Join(t.ArtifactDir(), \"status.png\"), []byte(\"png\"), 0o644)\n}\n",
	}
	for name, text := range files {
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	outDir := t.TempDir()
	gt := exec.Command(goCmd, "test", "-count=1", "-artifacts", "-outputdir", outDir, "./...")
	gt.Dir = mod
	gt.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local")
	if b, err := gt.CombinedOutput(); err != nil {
		t.Fatalf("go test -artifacts: %v\n%s", err, b)
	}
	var found []string
	filepath.WalkDir(outDir, func(p string, e fs.DirEntry, err error) error {
		if err == nil && e.Name() == "status.png" {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 || !strings.HasPrefix(found[0], filepath.Join(outDir, "_artifacts")+string(filepath.Separator)) {
		t.Errorf("go test kept %q; want one status.png below %s", found, filepath.Join(outDir, "_artifacts"))
	}
}
