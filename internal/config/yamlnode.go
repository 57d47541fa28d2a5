package config

import (
	"bytes"
	"errors"
	"io"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

const (
	// maxNodes caps the nodes one file may expand to through aliases and
	// merge keys, so that a small file cannot make Parse walk billions.
	maxNodes = 100_000
	// maxMergeDepth caps merge keys (<<) nested through aliases.
	maxMergeDepth = 64
)

// decoder walks a YAML node tree into a Config, checking every key and
// value on the way and recording the line of every key path.
type decoder struct {
	lines   map[string]int
	left    int
	merging map[*yaml.Node]bool // mappings whose merge keys are being resolved
	given   map[string]bool     // the key paths the file gives a value (not null)
}

// entry is one key: value pair of a mapping.
type entry struct {
	key   string
	line  int
	value *yaml.Node
}

// parseYAML returns the root node of data's single document, or nil for an
// empty document.
func parseYAML(data []byte) (root *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			root, err = nil, errf("", "the YAML parser failed on this file (%v); check its syntax", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for first := true; ; first = false {
		var doc yaml.Node
		switch err := dec.Decode(&doc); {
		case errors.Is(err, io.EOF):
			return root, nil
		case err != nil:
			return nil, syntaxError(err)
		case first && doc.Kind == yaml.DocumentNode && len(doc.Content) > 0:
			root = doc.Content[0]
		case !first && len(doc.Content) > 0 && !isNull(doc.Content[0]):
			return nil, errAt(doc.Line, "", "the file holds more than one YAML document (---); keep one")
		}
	}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a parser error into an *Error with its line.
func syntaxError(err error) *Error {
	msg := oneLine(err.Error())
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	msg = strings.TrimPrefix(msg, "yaml: ")
	hint := "check the indentation and quoting"
	if strings.Contains(msg, "cannot start any token") {
		hint = "YAML indents with spaces, not tabs; quote values that start with @, ` or %"
	}
	return errAt(line, "", "YAML syntax: %s (%s)", msg, hint)
}

// spend counts n nodes against the expansion cap.
func (d *decoder) spend(n int) error {
	d.left -= n
	if d.left < 0 {
		return errf("", "the file expands to more than %d YAML nodes through aliases; write it out plainly", maxNodes)
	}
	return nil
}

// deref follows an alias to the node it names. What it leads to is
// counted against the expansion cap where it is walked: a mapping's or a
// list's nodes, as they are read.
func deref(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == 0 || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func describe(n *yaml.Node) string {
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	}
	return quote(n.Value)
}

// entries returns the pairs of the mapping n, merge keys (<<) resolved, in
// the order written. A null n has none.
func (d *decoder) entries(n *yaml.Node, path string) ([]entry, error) {
	if n = deref(n); isNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, errAt(n.Line, path, "must be a mapping of keys, found %s", describe(n))
	}
	if err := d.spend(len(n.Content)); err != nil {
		return nil, err
	}
	var out []entry
	var merges []*yaml.Node
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := deref(n.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			return nil, errAt(n.Content[i].Line, path, "a key must be a plain name, found %s", describe(k))
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, n.Content[i+1])
			continue
		}
		if first, dup := seen[k.Value]; dup {
			return nil, errAt(k.Line, key(path, k.Value), "given twice (also at line %d); keep one", first)
		}
		seen[k.Value] = k.Line
		out = append(out, entry{key: k.Value, line: k.Line, value: n.Content[i+1]})
	}
	switch {
	case len(merges) == 0:
		return out, nil
	case d.merging[n]:
		return nil, errAt(n.Line, path, "a merge key (<<) includes the mapping it is part of; remove it")
	case len(d.merging) >= maxMergeDepth:
		return nil, errAt(n.Line, path, "merge keys (<<) nest more than %d deep; write it out plainly", maxMergeDepth)
	}
	d.merging[n] = true
	defer delete(d.merging, n)
	return d.merge(out, seen, merges, path)
}

// merge appends the pairs of the merged mappings whose keys are not set
// yet: explicit keys win, then earlier merged mappings.
func (d *decoder) merge(out []entry, seen map[string]int, merges []*yaml.Node, path string) ([]entry, error) {
	for _, m := range merges {
		m = deref(m)
		srcs := []*yaml.Node{m}
		if m != nil && m.Kind == yaml.SequenceNode {
			srcs = m.Content
		}
		if err := d.spend(len(srcs)); err != nil {
			return nil, err
		}
		for _, src := range srcs {
			es, err := d.entries(src, path)
			if err != nil {
				return nil, err
			}
			for _, e := range es {
				if _, ok := seen[e.key]; !ok {
					seen[e.key] = e.line
					out = append(out, e)
				}
			}
		}
	}
	return out, nil
}

// locate sets e.Line to the line of e.Path, or of the nearest enclosing
// key that the file holds.
func (d *decoder) locate(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Line > 0 {
		return err
	}
	best := ""
	for p, line := range d.lines {
		if len(p) > len(best) && within(e.Path, p) {
			best, e.Line = p, line
		}
	}
	return err
}

// within reports whether path p is at or under path parent.
func within(p, parent string) bool {
	rest, ok := strings.CutPrefix(p, parent)
	return ok && (rest == "" || rest[0] == '.' || rest[0] == '[')
}
