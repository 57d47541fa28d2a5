//go:build !linux

package idempotency

func checkLocalFS(string) error { return nil }
