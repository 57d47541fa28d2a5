// Package nearest finds the name a mistyped one most likely meant: the
// "did you mean" of an error message, for config keys, kinds, provider
// names and systemd directives alike.
package nearest

import (
	"slices"
	"strings"
)

// Name returns the candidate nearest got, or "" when none is near: the
// first (in sorted order) of those fewest edits away, at most two, once
// case, '_' and '-' are set aside; failing that, one of at least four
// letters that starts with got or that got starts with (limit for
// limit_usd).
func Name(got string, candidates []string) string {
	g, sorted := fold(got), slices.Sorted(slices.Values(candidates))
	folded := make([]string, len(sorted))
	best, bestD := "", 3
	for i, c := range sorted {
		f := fold(c)
		folded[i] = f
		if d := distance(g, f); d < min(bestD, len([]rune(f))) {
			best, bestD = c, d
		}
	}
	if best != "" {
		return best
	}
	for i, f := range folded {
		if min(len([]rune(f)), len([]rune(g))) >= 4 && (strings.HasPrefix(f, g) || strings.HasPrefix(g, f)) {
			return sorted[i]
		}
	}
	return ""
}

// fold is s with case, '_' and '-' set aside.
func fold(s string) string { return separators.Replace(strings.ToLower(s)) }

// separators drops the '_' and '-' of a name.
var separators = strings.NewReplacer("_", "", "-", "")

// distance is the Levenshtein distance between a and b, in runes. Long
// inputs are cut short: only near matches matter.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	ra, rb = ra[:min(len(ra), 64)], rb[:min(len(rb), 64)]
	prev, cur := make([]int, len(rb)+1), make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
