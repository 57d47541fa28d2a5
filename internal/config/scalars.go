package config

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The decoders of one value: a scalar of each type the config has, and the
// lists of them.

// scalar returns the text of the single value n.
func scalar(n *yaml.Node, path string) (string, error) {
	if n == nil {
		return "", errf(path, "must be a single value, found nothing")
	}
	if n.Kind != yaml.ScalarNode {
		return "", errAt(n.Line, path, "must be a single value, found %s", describe(n))
	}
	return n.Value, nil
}

func str(dst *string) field {
	return func(n *yaml.Node, path string) (err error) {
		*dst, err = scalar(n, path)
		return err
	}
}

func integer(dst *int) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		if err != nil {
			return err
		}
		var v int
		if n.ShortTag() != "!!int" || n.Decode(&v) != nil {
			return errAt(n.Line, path, "%s is not a whole number (write e.g. 3)", quote(s))
		}
		*dst = v
		return nil
	}
}

// count decodes a whole number of at least 1, as a limit's size.
func count(dst *int64) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		if err != nil {
			return err
		}
		var v int64
		if n.ShortTag() != "!!int" || n.Decode(&v) != nil || v < 1 {
			return errAt(n.Line, path, "%s is not a whole number of at least 1 (write e.g. 120)", quote(s))
		}
		*dst = v
		return nil
	}
}

func number(dst *float64) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		if err != nil {
			return err
		}
		var v float64
		tag := n.ShortTag()
		if tag != "!!int" && tag != "!!float" || n.Decode(&v) != nil ||
			math.IsNaN(v) || math.IsInf(v, 0) {
			return errAt(n.Line, path, "%s is not a number (write e.g. 0.15)", quote(s))
		}
		*dst = v
		return nil
	}
}

func boolean(dst *bool) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		if err != nil {
			return err
		}
		var v bool
		if n.ShortTag() != "!!bool" || n.Decode(&v) != nil {
			return errAt(n.Line, path, "%s is not true or false", quote(s))
		}
		*dst = v
		return nil
	}
}

func duration(dst *time.Duration) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		if err != nil {
			return err
		}
		v, err := time.ParseDuration(strings.TrimSpace(s))
		if err != nil {
			return errAt(n.Line, path, "%s is not a duration (write e.g. 30s or 2m)", quote(s))
		}
		*dst = v
		return nil
	}
}

var sizeRE = regexp.MustCompile(`^(\d+)\s*([KMG]i?B?|B)?$`)

// size decodes a byte count: plain bytes, or a number and KiB, MiB or GiB.
func size(dst *int64) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		if err != nil {
			return err
		}
		v, ok := parseSize(strings.TrimSpace(s))
		if !ok {
			return errAt(n.Line, path, "%s is not a size (write bytes, or e.g. 512KiB, 20MiB, 1GiB)", quote(s))
		}
		*dst = v
		return nil
	}
}

func parseSize(s string) (int64, bool) {
	m := sizeRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	shift := map[string]uint{"": 0, "B": 0, "KiB": 10, "MiB": 20, "GiB": 30}
	sh, ok := shift[m[2]]
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || v > math.MaxInt64>>sh {
		return 0, false
	}
	return v << sh, true
}

// list decodes a list, each element with one.
func (d *decoder) list(n *yaml.Node, path string, one func(i int, n *yaml.Node, path string) error) error {
	its, err := d.items(n, path)
	if err != nil {
		return err
	}
	for i, it := range its {
		if err := one(i, it, index(path, i)); err != nil {
			return err
		}
	}
	return nil
}

func (d *decoder) strs(dst *[]string) field {
	return func(n *yaml.Node, path string) error {
		out := []string{}
		err := d.list(n, path, func(_ int, n *yaml.Node, p string) error {
			s, err := scalar(n, p)
			out = append(out, s)
			return err
		})
		*dst = out
		return err
	}
}

func (d *decoder) ints(dst *[]int) field {
	return func(n *yaml.Node, path string) error {
		out := []int{}
		err := d.list(n, path, func(_ int, n *yaml.Node, p string) error {
			var v int
			err := integer(&v)(n, p)
			out = append(out, v)
			return err
		})
		*dst = out
		return err
	}
}
