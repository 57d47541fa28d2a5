//go:build !unix

package idempotency

import (
	"errors"
	"os"
)

const fileStoreSupported = false

const windowSupported = false

func flock(int, bool) error {
	return errors.New("idempotency: the file store needs flock: use the memory or redis store")
}

func mmap(*os.File, int) ([]byte, error) { return nil, flock(-1, true) }

func mmapAt(*os.File, int64, int) ([]byte, error) { return nil, flock(-1, true) }

func munmap([]byte) error { return nil }

func populate([]byte) {}
