//go:build linux

package limit_test

import (
	"testing"

	"github.com/sluice-llm/sluice/internal/leaktest"
	"github.com/sluice-llm/sluice/internal/limittest"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/state"
)

// TestFileInFlightAcrossHandles: two Files on one state directory (two
// processes, as it were) share a limit of calls in flight.
func TestFileInFlightAcrossHandles(t *testing.T) {
	leaktest.Check(t)
	dir := t.TempDir()
	var fs [2]*limit.File
	for i := range fs {
		st, err := state.OpenFile(dir, state.FileOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		if fs[i], err = limit.NewFile(st); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { fs[i].Close() })
	}
	limittest.InFlightAcross(t, fs[0], fs[1])
}
