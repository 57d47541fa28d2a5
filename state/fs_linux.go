//go:build linux

package state

import (
	"fmt"
	"syscall"
)

// checkLocalFS refuses a state directory on a file system where flock does
// not hold between hosts.
func checkLocalFS(dir string) error {
	fs, err := NetworkFS(dir)
	if err != nil {
		return fmt.Errorf("state: state directory %s: %w", dir, err)
	}
	if fs != "" {
		return fmt.Errorf("state: state directory %s is on %s, where file locks do not hold between hosts: choose a local directory (state.dir), or share state with the redis backend", dir, fs)
	}
	return nil
}

// NetworkFS names the network file system dir is on (NFS, CIFS, SMB,
// SMB2), where flock does not hold between hosts; "" for a local one.
func NetworkFS(dir string) (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "", err
	}
	return networkFS(uint32(st.Type)), nil
}

// networkFS names the network file system of a statfs magic number, or
// returns "" for any other.
func networkFS(magic uint32) string {
	switch magic {
	case 0x6969:
		return "NFS"
	case 0xFF534D42:
		return "CIFS"
	case 0x517B:
		return "SMB"
	case 0xFE534D42:
		return "SMB2"
	}
	return ""
}
