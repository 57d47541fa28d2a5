//go:build linux

package idempotency

import (
	"fmt"
	"syscall"
)

// checkLocalFS refuses a directory on a network file system, where flock
// does not hold between hosts.
func checkLocalFS(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return fmt.Errorf("idempotency: answers directory %s: %w", dir, err)
	}
	switch uint32(st.Type) {
	case 0x6969, 0xFF534D42, 0x517B, 0xFE534D42: // NFS, CIFS, SMB, SMB2
		return fmt.Errorf("idempotency: answers directory %s is on a network file system, where file locks do not hold between hosts: choose a local directory, or share answers through redis", dir)
	}
	return nil
}
