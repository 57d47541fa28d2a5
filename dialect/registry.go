package dialect

import (
	"regexp"
	"strings"
)

// all are the dialects, in the order Kinds lists them: the values of
// OpenAI, Azure, Anthropic, Vertex, Gemini and Bedrock, each with what
// ForPath asks of it.
var all = []dialect{openAI{}, azure{}, anthropic{}, vertex{}, gemini{}, bedrock{}}

// dialect is a Dialect as this package knows it.
type dialect interface {
	Dialect
	// owns reports whether a URL path is the dialect's alone (false for
	// one whose paths others share, as OpenAI's).
	owns(path string) bool
	// address returns the address of the dialect's cloud endpoint for
	// region, and whether its address follows from a region at all.
	address(region string) (string, bool)
}

// Lookup returns the dialect a config's kind names, and whether there is
// one.
func Lookup(kind string) (Dialect, bool) {
	for _, d := range all {
		if d.Kind() == kind {
			return d, true
		}
	}
	return nil, false
}

// Kinds returns the names of the dialects, as a config writes them.
func Kinds() []string {
	out := make([]string, len(all))
	for i, d := range all {
		out[i] = d.Kind()
	}
	return out
}

// KeyHeaders returns the header every dialect reads a key from: the
// headers a gateway scrubs from a client's request before it injects its
// own key.
func KeyHeaders() []string {
	out := []string{"Authorization"}
	for _, d := range all {
		if h := d.Traits().KeyHeader; h != "" && !containsFold(out, h) {
			out = append(out, h)
		}
	}
	return out
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// ForPath returns the dialect a URL path speaks, for a caller that names
// none (a library Transport without a Dialect): the first that finds the
// path its own, else OpenAI.
func ForPath(p string) Dialect {
	for _, d := range all {
		if d.owns(p) {
			return d
		}
	}
	return OpenAI
}

// RegionalBaseURL returns the address of a provider of kind in region,
// for the dialects reached at their cloud's endpoint for a region
// (Bedrock, Vertex AI), and whether kind is one of them. The address is
// "" when region is not a region (IsRegion): it is written into a host
// name.
func RegionalBaseURL(kind, region string) (url string, regional bool) {
	for _, d := range all {
		if d.Kind() == kind {
			url, regional = d.address(region)
			if !IsRegion(region) {
				url = ""
			}
			return url, regional
		}
	}
	return "", false
}

// IsRegion reports whether r looks like a cloud's region: lower-case
// letters and digits in words joined by single dashes (us-east-1,
// europe-west4, global).
func IsRegion(r string) bool { return regionRE.MatchString(r) }

var regionRE = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
