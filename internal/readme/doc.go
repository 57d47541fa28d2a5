// Package readme holds no code: its tests run every code block of the
// repository's README.md. Each block is matched to a row of the table in
// readme_test.go, which says how it is checked (a YAML config parsed and
// its claims asserted, Go compiled, Python byte-compiled, Node run against
// `sluice serve --fake`, a shell command's flags checked against the
// built binary) and, where a block cannot run here, why. A block that no
// row matches fails the test. map_test.go holds ARCHITECTURE.md's package
// tables and the README's Layout to `go list ./...`: a package missing
// from either, or a row naming one that is gone, fails.
package readme
