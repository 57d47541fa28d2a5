//go:build !unix

package redisstore

func (s *server) thaw() {}
