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

func mmap(*os.File, int) ([]byte, error) { return nil, flock(nil, true) }

func munmap([]byte) error { return nil }
