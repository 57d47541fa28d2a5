//go:build !linux

package state

// checkLocalFS accepts every directory: the network file system check
// needs Linux's statfs.
func checkLocalFS(string) error { return nil }

// NetworkFS names the network file system dir is on; without Linux's
// statfs it cannot tell, and says "" (local) for every directory.
func NetworkFS(string) (string, error) { return "", nil }
