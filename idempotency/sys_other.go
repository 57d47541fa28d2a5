//go:build !unix

package idempotency

import (
	"errors"
	"os"
)

const fileStoreSupported = false

func flock(*os.File, bool) error {
	return errors.New("idempotency: the file store needs flock: use the memory or redis store")
}

// diskSize is the space a file takes on disk: its length, here.
func diskSize(info os.FileInfo) int64 { return info.Size() }
