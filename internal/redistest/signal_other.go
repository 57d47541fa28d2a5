//go:build !unix

package redistest

// Thaw does nothing where processes cannot be stopped.
func (s *Server) Thaw() {}
