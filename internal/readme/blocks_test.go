package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// block is one fenced code block of the README.
type block struct {
	line  int    // the line of its opening fence, from 1
	lang  string // the fence's info string: sh, go, yaml, js, python or ""
	first string // its first line
	text  string // its lines, each ending in \n
}

func (b block) String() string {
	return "README.md:" + strconv.Itoa(b.line) + " (" + b.lang + ") " + b.first
}

var fenceRE = regexp.MustCompile("^```([A-Za-z]*)$")

// readmeBlocks returns the README's fenced code blocks.
func readmeBlocks(t *testing.T) []block {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks []block
	var cur *block
	for i, l := range strings.Split(string(b), "\n") {
		switch {
		case cur == nil:
			if m := fenceRE.FindStringSubmatch(l); m != nil {
				cur = &block{line: i + 1, lang: m[1]}
			}
		case l == "```":
			cur.first, _, _ = strings.Cut(cur.text, "\n")
			blocks = append(blocks, *cur)
			cur = nil
		default:
			cur.text += l + "\n"
		}
	}
	if cur != nil {
		t.Fatalf("README.md:%d: a code block is never closed", cur.line)
	}
	return blocks
}

// root returns the repository's root directory.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}
