package request

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// MaxModelLen is the longest model name accepted from a client, in bytes.
const MaxModelLen = 256

// ErrInvalidModel is matched (errors.Is) by every *ModelError.
var ErrInvalidModel = errors.New("sluice: invalid model name")

// ModelError is a request's model that is refused: not a string, longer
// than MaxModelLen, not valid UTF-8, or holding a character that is not
// printable.
type ModelError struct {
	// Problem says what is wrong, e.g. "is 300 bytes long".
	Problem string
}

// Error names the problem and the rule.
func (e *ModelError) Error() string {
	return fmt.Sprintf("sluice: the request's model %s; send a model name of at most %d bytes of printable UTF-8", e.Problem, MaxModelLen)
}

// Is reports whether target is ErrInvalidModel.
func (e *ModelError) Is(target error) bool { return target == ErrInvalidModel }

// CheckModel returns nil when name may be used as a model name: at most
// MaxModelLen bytes of valid UTF-8, every character printable (letters,
// marks, numbers, punctuation, symbols and the ASCII space). The empty
// name passes. Otherwise it returns a *ModelError.
func CheckModel(name string) error {
	if len(name) > MaxModelLen {
		return &ModelError{Problem: fmt.Sprintf("is %d bytes long", len(name))}
	}
	for i, r := range name {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(name[i:]); size == 1 {
				return &ModelError{Problem: fmt.Sprintf("is not valid UTF-8 (byte %d)", i)}
			}
		}
		if !unicode.IsPrint(r) {
			return &ModelError{Problem: fmt.Sprintf("holds the character %U, which is not printable", r)}
		}
	}
	return nil
}

// BodyModel returns the top-level "model" of a JSON request body and the
// *ModelError of CheckModel, or one saying that "model" is not a string.
// A body without "model", or that is not a JSON object, gives "", nil.
func BodyModel(b []byte) (string, error) {
	start, end := findKey(b, "model")
	if start < 0 {
		return "", nil
	}
	if b[start] != '"' {
		return "", &ModelError{Problem: "is not a JSON string"}
	}
	name := unquote(b[start+1 : end-1])
	return name, CheckModel(name)
}

// loggedPrefix is how many bytes of a refused model name Loggable keeps.
const loggedPrefix = 64

// Loggable returns name when CheckModel accepts it; otherwise a short,
// printable ASCII stand-in: its first bytes quoted with Go escapes, then
// its length, e.g. "\xff\xfe"... (100000 bytes).
func Loggable(name string) string {
	if CheckModel(name) == nil {
		return name
	}
	head := name[:min(len(name), loggedPrefix)]
	return strconv.QuoteToASCII(head) + "... (" + strconv.Itoa(len(name)) + " bytes)"
}
