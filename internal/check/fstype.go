package check

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// networkFS names the filesystems, by statfs magic number, on which flock
// does not do what the file state backend needs: it is emulated over the
// network's lock manager, kept local to one client, or left to the
// filesystem.
var networkFS = map[uint32]string{
	0x6969:     "NFS",
	0xFF534D42: "CIFS",
	0x517B:     "SMB",
	0xFE534D42: "SMB2",
	0x5346414F: "AFS",
	0x6B414653: "AFS (kAFS)",
	0x00C36400: "CephFS",
	0x01021997: "9P",
	0x73757245: "Coda",
	0x564C:     "NCP",
	0x01161970: "GFS2",
	0x7461636F: "OCFS2",
	0x0BD00BD0: "Lustre",
	0x65735546: "FUSE (sshfs, s3fs, GlusterFS…)",
}

// stateWarning returns a warning when the state directory dir, or the
// nearest parent of it that exists (dir itself is not created), is on a
// filesystem where flock is unreliable; "" otherwise, or when the
// filesystem cannot be told. fsMagic returns the statfs magic number of a
// path.
func stateWarning(dir string, fsMagic func(string) (uint32, error)) string {
	at, err := nearestExisting(dir)
	if err != nil {
		return ""
	}
	magic, err := fsMagic(at)
	if err != nil {
		return ""
	}
	name, bad := networkFS[magic]
	if !bad {
		return ""
	}
	where := dir
	if at != dir {
		where = fmt.Sprintf("%s (not created yet; its parent %s)", dir, at)
	}
	return fmt.Sprintf("state: the state directory %s is on %s, where flock is unreliable: breaker and budget state may be lost or counted twice between processes — put state.dir on a local filesystem, or use state.backend: redis to share state between hosts", where, name)
}

// nearestExisting returns p, or its nearest parent that exists.
func nearestExisting(p string) (string, error) {
	p = filepath.Clean(p)
	for {
		_, err := os.Stat(p)
		if err == nil {
			return p, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		p = parent
	}
}
