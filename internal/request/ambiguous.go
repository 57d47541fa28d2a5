package request

import (
	"errors"
	"fmt"
)

// ErrAmbiguous is matched (errors.Is) by every *AmbiguousError.
var ErrAmbiguous = errors.New("sluice: ambiguous request body")

// AmbiguousError is a request body refused because JSON parsers read it
// differently: it names a member Sluice reads (model, stream, an output
// limit) twice, where some parsers keep the first copy and others the
// last, or in another case ("Model"), which encoding/json takes for the
// member and most other parsers do not. Sluice would price, limit and
// route the call by one reading while the provider served the other.
type AmbiguousError struct {
	// Name is the member as Sluice reads it, e.g. "model".
	Name string
	// Key is the key, decoded, that makes the body ambiguous: a second
	// copy of Name, or Name in another case.
	Key string
}

// Error names the member and the fix.
func (e *AmbiguousError) Error() string {
	if e.Key == e.Name {
		return fmt.Sprintf("sluice: the request body names %q more than once; JSON parsers disagree on which copy counts, so send it once", e.Name)
	}
	return fmt.Sprintf("sluice: the request body names %q as %q; JSON parsers disagree on whether that is the same member, so write it %q", e.Name, e.Key, e.Name)
}

// Is reports whether target is ErrAmbiguous.
func (e *AmbiguousError) Is(target error) bool { return target == ErrAmbiguous }

// once returns the *AmbiguousError of the key k, which names the member
// name as encoding/json matches it, when seen says that the member was
// named before or k, decoded, is not name itself; else nil. It allocates
// only for a key written with escapes.
func once(k []byte, name string, seen bool) *AmbiguousError {
	exact := string(k) == name
	if !exact && hasEscape(k) {
		exact = unquote(k) == name
	}
	if !seen && exact {
		return nil
	}
	key := string(k)
	if !exact {
		key = unquote(k)
	}
	return &AmbiguousError{Name: name, Key: key}
}

func hasEscape(k []byte) bool {
	for _, c := range k {
		if c == '\\' {
			return true
		}
	}
	return false
}

// Unique returns an *AmbiguousError when the top level of the JSON object
// b names one member more than once or in another case, the member being
// known by any of names (aliases, as a protobuf field's JSON and proto
// names: "generationConfig", "generation_config"); else nil. The error
// names the first of names.
func Unique(b []byte, names ...string) error {
	seen := false
	var err error
	Members(b, func(k, _ []byte) bool {
		for _, name := range names {
			if !jsonName(k, name) {
				continue
			}
			if e := once(k, name, seen); e != nil {
				e.Name = names[0]
				err = e
				return false
			}
			seen = true
			break
		}
		return true
	})
	return err
}
