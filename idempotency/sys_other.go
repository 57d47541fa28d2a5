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
