package request

import (
	"unicode"
	"unicode/utf8"
)

// Fields is what Sluice reads from a JSON request body: every top-level
// member it needs, found in one pass by Scan.
type Fields struct {
	// Model is the top-level "model" string, decoded: the first member of
	// that name, as Model and BodyModel read it. It is "" when there is
	// none or it is not a string.
	Model string

	// Stream is true when the body asks for a stream: encoding/json would
	// decode its "stream" (matched as encoding/json matches a struct
	// field: escapes decoded, case folded, the last one kept) into a bool
	// as true, without an error.
	Stream bool

	// StreamOptions is true when the body has a "stream_options" member
	// (matched as for Stream), whatever its value, null included.
	StreamOptions bool

	// MaxTokens is the output limit the request names: the first of
	// "max_tokens", "max_completion_tokens" and "max_output_tokens", in
	// that order, that is an integer above 0, each read as Int reads it;
	// else Gemini's generationConfig.maxOutputTokens. It is 0 when there
	// is none.
	MaxTokens int64
}

// maxTokenKeys are the names of a request's output limit, in the order
// they are looked for.
var maxTokenKeys = [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens"}

// Scan reads the Fields of a JSON request body in one pass over its top
// level, without decoding it and without allocating beyond the model
// name. A body that is not a JSON object gives no fields.
//
// The error is an *AmbiguousError when the top level names model, stream
// or an output limit twice, or in another case ("Model"): parsers differ
// on which copy counts, or whether it counts, so what Sluice reads could
// differ from what the provider reads; the fields are then not read.
// Otherwise it is the *ModelError of BodyModel, the other fields being
// read all the same.
//
// For a valid JSON body that Scan accepts, every field agrees with
// encoding/json; the scan does not check the strings' contents (members),
// so a body that is not valid JSON may give any of them.
func Scan(b []byte) (Fields, error) {
	var f Fields
	var model []byte                    // the model member's value; nil when absent
	var limits [len(maxTokenKeys)]int64 // each key's value; -1 when absent or not an integer above 0
	var seen [len(scanned)]bool
	streamBad := false
	var err error
	Members(b, func(k, v []byte) bool {
		m := scannedMember(k)
		if m < 0 {
			if mayName(k, 's') && jsonName(k, "stream_options") {
				f.StreamOptions = true
			}
			return true
		}
		if e := once(k, scanned[m], seen[m]); e != nil {
			err = e
			return false
		}
		seen[m] = true
		switch m {
		case memberModel:
			model = v
		case memberStream:
			switch string(v) {
			case "true":
				f.Stream = true
			case "false", "null":
			default:
				streamBad = true
			}
		default:
			i := m - memberLimits
			limits[i] = -1
			if n, ok := parseInt(v); ok && n > 0 {
				limits[i] = n
			}
		}
		return true
	})
	if err != nil {
		return Fields{}, err
	}
	f.Stream = f.Stream && !streamBad
	for i := range limits {
		if seen[memberLimits+i] && limits[i] > 0 {
			f.MaxTokens = limits[i]
			break
		}
	}
	if model == nil {
		return f, nil
	}
	if model[0] != '"' {
		return f, &ModelError{Problem: "is not a JSON string"}
	}
	f.Model = unquote(model[1 : len(model)-1])
	return f, CheckModel(f.Model)
}

// The members Scan reads, by index in scanned.
const (
	memberModel  = 0
	memberStream = 1
	memberLimits = 2 // maxTokenKeys, in their order
)

// scanned are the names of the members Scan reads.
var scanned = [...]string{"model", "stream", maxTokenKeys[0], maxTokenKeys[1], maxTokenKeys[2]}

// scannedMember returns the index in scanned of the member the key k
// names as encoding/json matches it (escapes decoded, case folded), or -1.
func scannedMember(k []byte) int {
	if mayName(k, 'm') {
		if jsonName(k, "model") {
			return memberModel
		}
		for i, name := range maxTokenKeys {
			if jsonName(k, name) {
				return memberLimits + i
			}
		}
	}
	if mayName(k, 's') && jsonName(k, "stream") {
		return memberStream
	}
	return -1
}

// mayName reports whether the key k may name a member starting with the
// ASCII lower-case letter c: a cheap test before jsonName. A key that
// starts with an escape or a non-ASCII letter (U+017F folds to s, U+212A
// to k) may.
func mayName(k []byte, c byte) bool {
	return len(k) > 0 && (k[0]|0x20 == c || k[0] == '\\' || k[0] >= utf8.RuneSelf)
}

// parseInt reads a base-10 int64 as strconv.ParseInt(string(s), 10, 64)
// does (an optional sign, then digits, in range), without allocating.
func parseInt(s []byte) (int64, bool) {
	neg := false
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if len(s) == 0 {
		return 0, false
	}
	const limit = 1 << 63 // the magnitude of the smallest int64
	var n uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (limit-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		return -int64(n), true // n == 1<<63 wraps to the smallest int64, as wanted
	}
	if n == limit {
		return 0, false
	}
	return int64(n), true
}

// jsonName reports whether the key k, as written in a JSON object,
// names the field name as encoding/json matches keys to struct fields:
// its escapes decoded, compared with bytes.EqualFold. name is ASCII.
func jsonName(k []byte, name string) bool {
	j := 0
	for i := 0; i < len(k); {
		var r rune
		switch {
		case k[i] == '\\':
			u, n := unicodeEscape(k[i:]) // any other escape is not a letter
			if n == 0 {
				return false
			}
			r, i = u, i+n
		case k[i] < utf8.RuneSelf:
			r, i = rune(k[i]), i+1
		default:
			var n int
			r, n = utf8.DecodeRune(k[i:])
			i += n
		}
		if j >= len(name) || !foldEqual(r, rune(name[j])) {
			return false
		}
		j++
	}
	return j == len(name)
}

// foldEqual reports whether r and the ASCII t are equal under Unicode
// simple case folding, as bytes.EqualFold compares runes.
func foldEqual(r, t rune) bool {
	if r < utf8.RuneSelf {
		return lowerASCII(r) == lowerASCII(t)
	}
	for f := unicode.SimpleFold(t); f != t; f = unicode.SimpleFold(f) {
		if f == r {
			return true
		}
	}
	return false
}

func lowerASCII(r rune) rune {
	if 'A' <= r && r <= 'Z' {
		return r + 'a' - 'A'
	}
	return r
}
