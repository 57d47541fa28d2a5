//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package breaker

import "errors"

const fileStoreSupported = false

// mapping stands in for a mapped state file where the file store is not
// supported; OpenFile refuses before one is ever made.
type mapping struct {
	w *words
}

var errNoFileStore = errors.New("breaker: the file store is not supported on this system")

func openMapping(string, payload) (*mapping, bool, error) { return nil, false, errNoFileStore }

func (m *mapping) lock() error                { return errNoFileStore }
func (m *mapping) unlock() error              { return nil }
func (m *mapping) grow() error                { return errNoFileStore }
func (m *mapping) check(string) (int64, bool) { return 0, false }
func (m *mapping) close() error               { return nil }
