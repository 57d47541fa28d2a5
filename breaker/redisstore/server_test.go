package redisstore

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/redistest"
)

// logBuffer collects a store's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// testTimeout is the Redis timeout of the tests that are not about
// timeouts. Bursts of calls from race-instrumented processes on a small,
// busy machine can queue for the CPU longer than the 100ms default, and a
// fallback to local breakers would make figures meant to be Redis's
// local. The tests of the timeout itself set Timeout to 100ms.
const testTimeout = 5 * time.Second

// newStore returns a store of srv with opts' other fields, and its log.
// A zero opts.Timeout is testTimeout.
func newStore(t testing.TB, srv *redistest.Server, opts Options) (*Store, *logBuffer) {
	t.Helper()
	var lb logBuffer
	opts.URL = srv.URL()
	if opts.Timeout == 0 {
		opts.Timeout = testTimeout
	}
	opts.Logger = slog.New(slog.NewTextHandler(&lb, nil))
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &lb
}

// waitFor polls cond every millisecond until it holds or d has passed.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
}
