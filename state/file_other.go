//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package state

import "errors"

const fileStoreSupported = false

// mapping stands in for a mapped state file where the file store is not
// supported; OpenFile refuses before one is ever made.
type mapping struct {
	fd   int
	page int
	w    *words
}

// region stands in for the store's reserved pages.
type region struct{}

var errNoFileStore = errors.New("state: the file store is not supported on this system")

func reserveRegion(int) (region, error)         { return region{}, errNoFileStore }
func (region) mapFile(int, int) (*words, error) { return nil, errNoFileStore }
func (region) blank(int) error                  { return nil }
func (region) release() error                   { return nil }
func openGenerations(string) (*genPage, error)  { return nil, errNoFileStore }
func (g *genPage) repair()                      {}
func (g *genPage) close() error                 { return nil }
func closeFD(int)                               {}
func removeState(string) error                  { return errNoFileStore }
func (m *mapping) ensureSize() (bool, error)    { return false, errNoFileStore }
func (m *mapping) lock() error                  { return errNoFileStore }
func (m *mapping) unlock() error                { return nil }
func (m *mapping) grow() error                  { return errNoFileStore }
func (m *mapping) check(string) (int64, bool)   { return 0, false }
func (m *mapping) closeFile() error             { return nil }

func openState(string, *payload, bool) (int, bool, bool, error) {
	return -1, false, false, errNoFileStore
}

func sweepFile(string, func(*payload, readStatus) bool, func()) error { return errNoFileStore }
