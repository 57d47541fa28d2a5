package main

import (
	"io"

	"github.com/sluice-llm/sluice/internal/audit"
)

// runAudit adapts audit.Run, which reads no input, to a command.
func runAudit(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return audit.Run(args, stdout, stderr)
}
