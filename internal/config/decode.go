package config

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// Parse parses a YAML config over the built-in defaults and validates it.
// A key the file gives replaces its default; CONFIG.md says how
// sections, presets and null values combine with the defaults. A drain
// left out is the longest total of the policies the file ends with.
func Parse(data []byte) (*Config, error) {
	if len(data) > maxFileSize {
		return nil, errf("", "the file is larger than 4 MiB; a config is a few kilobytes, is this the right file?")
	}
	root, err := parseYAML(data)
	if err != nil {
		return nil, err
	}
	c := Default()
	d := &decoder{lines: map[string]int{}, left: maxNodes, merging: map[*yaml.Node]bool{}, given: map[string]bool{}}
	if root = deref(root); !isNull(root) && root.Kind != yaml.MappingNode {
		return nil, errAt(root.Line, "", "the file must be a mapping of keys (listen:, routes:, policies:, …), found %s", describe(root))
	}
	if err := d.fields(reflect.ValueOf(c).Elem(), root, "", nil); err != nil { // an empty file has no keys
		return nil, err
	}
	if !d.given["drain"] {
		c.Drain, _ = c.LongestTotal()
	}
	if err := c.Validate(); err != nil {
		return nil, d.locate(err)
	}
	return c, nil
}

// foreign gives the tags of other packages' fields whose key is not their
// name in snake_case.
var foreign = map[reflect.Type]map[string]string{
	reflect.TypeFor[sluice.Policy]():    {"Name": "-", "BreakerScope": "breaker.scope", "ResumeMax": "resume_max,count"},
	reflect.TypeFor[sluice.Hedge]():     {"After": "after,text", "MaxShare": "max_share,share"},
	reflect.TypeFor[sluice.Retry]():     {"Budget": "budget,share,off"},
	reflect.TypeFor[breaker.Settings](): {"Lease": "-", "OnStateChange": "-"},
	reflect.TypeFor[spend.Budget]():     {"AllowUnpriced": "unpriced,allow", "AllowOnLedgerError": "on_store_error,allow"},
	reflect.TypeFor[limit.Limit](): {"Requests": "requests_per_minute,per_minute",
		"Tokens": "tokens_per_minute,per_minute", "Reserve": "reserve,share"},
}

// slot is where the value of one key goes.
type slot struct {
	v    reflect.Value
	opts string
	// inner are the keys other fields put in this one's section.
	inner map[string]slot
}

// keys returns the keys of the struct v, each a field named by its yaml
// tag: `yaml:"max_body,size"` is the key max_body, whose value is written
// as a size. A tag's options say how a value is written when its Go type
// does not say it:
//
//	size        a byte count: 1024, 512KiB, 20MiB, 1GiB
//	count       a whole number of at least 1
//	tokens      a count of tokens, at least 1
//	share       a fraction (0.2) or a percentage (20%)
//	off         with share: also off, stored as -1
//	allow       a bool written allow (true) or refuse (false)
//	per_minute  a limit.Rate written as its count of calls per minute
//	alone       a list's item may be this field's value alone
//	text        a value the field's type reads itself (encoding.TextUnmarshaler)
//
// A tag "section.key" puts the key in another field's section
// (sluice.Policy's BreakerScope is breaker.scope), and "-" makes no key. The fields of
// other packages' types carry no tags: their key is their name in
// snake_case (FirstByte is first_byte), but for those foreign names.
func keys(v reflect.Value) map[string]slot {
	out := map[string]slot{}
	for i := range v.NumField() {
		f := v.Type().Field(i)
		tag, ok := f.Tag.Lookup("yaml")
		if !ok {
			tag, ok = foreign[v.Type()][f.Name]
		}
		if !ok {
			tag = snake(f.Name)
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		s := slot{v: v.Field(i), opts: opts}
		if sec, k, ok := strings.Cut(name, "."); ok {
			name, s = sec, out[sec]
			if s.inner == nil {
				s.inner = map[string]slot{}
			}
			s.inner[k] = slot{v: v.Field(i), opts: opts}
		} else {
			s.inner = out[name].inner
		}
		out[name] = s
	}
	return out
}

// snake returns a Go name in snake_case: MaxRetryAfter is max_retry_after,
// LimitUSD limit_usd.
func snake(name string) string {
	var b strings.Builder
	r := []rune(name)
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (!unicode.IsUpper(r[i-1]) || i+1 < len(r) && unicode.IsLower(r[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// fields decodes the mapping n into the struct v: every key must be one of
// v's, or of inner. Null values are skipped, so that they keep their
// defaults.
func (d *decoder) fields(v reflect.Value, n *yaml.Node, path string, inner map[string]slot) error {
	ks := keys(v)
	maps.Copy(ks, inner)
	return d.pairs(n, path, func(e entry, p string, val *yaml.Node) error {
		s, ok := ks[e.key]
		switch {
		case !ok:
			return errAt(e.line, p, "unknown key%s", suggest(e.key, slices.Collect(maps.Keys(ks))))
		case isNull(val):
			return nil
		}
		d.given[p] = true
		return d.value(s, val, p)
	})
}

// pairs calls f with each pair of the mapping n (see entries), the path
// of its key, whose line it records, and its value dereferenced.
func (d *decoder) pairs(n *yaml.Node, path string, f func(e entry, p string, val *yaml.Node) error) error {
	es, err := d.entries(n, path)
	if err != nil {
		return err
	}
	for _, e := range es {
		p := key(path, e.key)
		d.lines[p] = e.line
		if err := f(e, p, deref(e.value)); err != nil {
			return err
		}
	}
	return nil
}

// value decodes the node n, not null, at path into s.
func (d *decoder) value(s slot, n *yaml.Node, path string) error {
	v := s.v
	switch {
	case v.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.value(slot{v: v.Elem(), opts: s.opts, inner: s.inner}, n, path)
	case has(s.opts, "per_minute"):
		return setScalar(v.FieldByName("Limit"), n, path, "count")
	case has(s.opts, "text"): // a single value, read by its type
	case v.Kind() == reflect.Struct:
		return d.fields(v, n, path, s.inner)
	case v.Kind() == reflect.Slice:
		return d.list(v, n, path)
	case v.Kind() == reflect.Map:
		return d.named(v, n, path)
	}
	return setScalar(v, n, path, s.opts)
}

// list decodes the list n into the slice v, replacing it.
func (d *decoder) list(v reflect.Value, n *yaml.Node, path string) error {
	if n.Kind != yaml.SequenceNode {
		return errAt(n.Line, path, "must be a list, found %s; write [a, b] or one \"- item\" a line", describe(n))
	}
	if err := d.spend(len(n.Content)); err != nil {
		return err
	}
	out := reflect.MakeSlice(v.Type(), 0, len(n.Content))
	for i, it := range n.Content {
		it, p := deref(it), index(path, i)
		d.lines[p] = it.Line
		e, err := d.entry(v.Type().Elem(), "", it, p)
		if err != nil {
			return err
		}
		out = reflect.Append(out, e)
	}
	v.Set(out)
	return nil
}

// named decodes a mapping of names the operator chose into the map v,
// replacing it. A null entry keeps what fresh gives it.
func (d *decoder) named(v reflect.Value, n *yaml.Node, path string) error {
	v.Set(reflect.MakeMap(v.Type()))
	return d.pairs(n, path, func(e entry, p string, val *yaml.Node) error {
		ev, err := d.entry(v.Type().Elem(), e.key, val, p)
		if err == nil {
			v.SetMapIndex(reflect.ValueOf(e.key), ev)
		}
		return err
	})
}

// entry decodes n, dereferenced, at path into a fresh entry of type t
// named name (a list's item: ""), and completes it. An item that is one
// value fills the field tagged alone.
func (d *decoder) entry(t reflect.Type, name string, n *yaml.Node, path string) (reflect.Value, error) {
	e := fresh(t, name)
	if e.Kind() != reflect.Struct {
		return e, setScalar(e, n, path, "")
	}
	if n.Kind == yaml.ScalarNode {
		for _, s := range keys(e) {
			if has(s.opts, "alone") {
				return e, setScalar(s.v, n, path, "")
			}
		}
	}
	if err := d.fields(e, n, path, nil); err != nil {
		return e, err
	}
	return e, d.finish(e, name, path)
}

// has reports whether the comma-separated opts hold opt.
func has(opts, opt string) bool { return slices.Contains(strings.Split(opts, ","), opt) }
