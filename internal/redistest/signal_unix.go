//go:build unix

package redistest

import "syscall"

// Freeze stops redis-server (SIGSTOP): its sockets stay open, it answers
// nothing.
func (s *Server) Freeze() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatal(err)
	}
}

// Thaw lets a frozen redis-server run again (SIGCONT).
func (s *Server) Thaw() {
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGCONT)
	}
}
