//go:build unix

package redisstore

import "syscall"

// freeze stops redis-server (SIGSTOP): its sockets stay open, it answers
// nothing.
func (s *server) freeze() {
	s.t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		s.t.Fatal(err)
	}
}

// thaw lets a frozen redis-server run again (SIGCONT).
func (s *server) thaw() {
	if s.cmd != nil {
		s.cmd.Process.Signal(syscall.SIGCONT)
	}
}
