package config

import (
	"encoding"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// setScalar decodes the single value n at path into v, by v's type and
// the options of its tag (see keys).
func setScalar(v reflect.Value, n *yaml.Node, path, opts string) error {
	if n.Kind != yaml.ScalarNode {
		return errAt(n.Line, path, "must be a single value, found %s", describe(n))
	}
	s, tag := n.Value, n.ShortTag()
	bad := func(format string) error { return errAt(n.Line, path, format, quote(s)) }
	switch {
	case has(opts, "text"): // the type reads its own text and says what is wrong with it
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return errAt(n.Line, path, "%s", err.Error())
		}
	case v.Type() == reflect.TypeFor[time.Duration]():
		d, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return bad("%s is not a duration (write e.g. 30s or 2m)")
		}
		v.SetInt(int64(d))
	case has(opts, "size"):
		b, ok := parseSize(strings.TrimSpace(s))
		if !ok {
			return bad("%s is not a size (write bytes, or e.g. 512KiB, 20MiB, 1GiB)")
		}
		v.SetInt(b)
	case has(opts, "share"):
		return setShare(v, n, path, s, has(opts, "off"))
	case has(opts, "allow"):
		if s != "allow" && s != "refuse" && s != "" {
			return bad("%s must be allow or refuse (or left out for the default, refuse)")
		}
		v.SetBool(s == "allow")
	case v.Kind() == reflect.String:
		v.SetString(s)
	case v.Kind() == reflect.Bool:
		if tag != "!!bool" || n.Decode(v.Addr().Interface()) != nil {
			return bad("%s is not true or false")
		}
	case v.Kind() == reflect.Float64:
		var f float64
		if tag != "!!int" && tag != "!!float" || n.Decode(&f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return bad("%s is not a number (write e.g. 0.15)")
		}
		v.SetFloat(f)
	case has(opts, "count"), has(opts, "tokens"):
		var i int64
		if tag != "!!int" || n.Decode(&i) != nil || i < 1 {
			if has(opts, "tokens") {
				return bad("%s is not a count of tokens of at least 1 (write e.g. 128000, or leave it out when not known)")
			}
			return bad("%s is not a whole number of at least 1 (write e.g. 120)")
		}
		v.SetInt(i)
	default: // a whole number
		if tag != "!!int" || n.Decode(v.Addr().Interface()) != nil {
			return bad("%s is not a whole number (write e.g. 3)")
		}
	}
	return nil
}

// setShare decodes a share: a percentage (20%) or a fraction (0.2), or
// when off is allowed, off (stored as -1).
func setShare(v reflect.Value, n *yaml.Node, path, s string, off bool) error {
	what, also := "share (write e.g. 20%% or 0.2)", ""
	if off {
		what, also = "fraction (write e.g. 0.2 or 20%%, or off)", ", or off"
		if s == "off" {
			v.SetFloat(-1)
			return nil
		}
	}
	if pct, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
		f, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err != nil {
			return errAt(n.Line, path, "%s is not a percentage (write e.g. 20%% or 0.2"+also+")", quote(s))
		}
		v.SetFloat(f / 100)
		return nil
	}
	if setScalar(v, n, path, "") != nil {
		return errAt(n.Line, path, "%s is not a "+what, quote(s))
	}
	return nil
}

var sizeRE = regexp.MustCompile(`^(\d+)\s*(B|[KMG]iB)?$`)

// parseSize parses a byte count: plain bytes, or a number and KiB, MiB or
// GiB.
func parseSize(s string) (int64, bool) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	sh := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30}[m[2]]
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || v > math.MaxInt64>>sh {
		return 0, false
	}
	return v << sh, true
}
