package check

import "syscall"

// fsMagic returns the statfs magic number of the filesystem path is on.
func fsMagic(path string) (uint32, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return 0, err
	}
	return uint32(st.Type), nil
}
