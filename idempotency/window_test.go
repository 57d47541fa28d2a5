package idempotency

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestWindowMovesWithinItsMapping: records appended one after another
// move a log's window on, each time extending the log with zeros to the
// window's end (16 to 64 KiB past the page of the committed end), while
// the log is mapped again only once the window passes the end of its
// mapping (reach): a few mappings for 768 KiB of records, not one a
// window. Every record reads back from the file, and the file runs in
// zeros from the last record to the window's end.
func TestWindowMovesWithinItsMapping(t *testing.T) {
	if !windowSupported {
		t.Skip("no window here: logs are written with write calls")
	}
	log, err := os.OpenFile(filepath.Join(t.TempDir(), "ab-1.log"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	var w window
	defer w.unmap()
	record := func(i int) []byte { // 1,000 bytes that say which record they are
		return append([]byte(fmt.Sprintf("record %06d ", i)), bytes.Repeat([]byte{byte('a' + i%26)}, 986)...)
	}
	var off int64
	mappings, moves := 0, 0
	at, end := int64(-1), int64(0)
	n := 0
	for ; off < 768<<10; n++ {
		r := record(n)
		if !w.put(log, r, off) {
			t.Fatalf("record %d at %d: not put through the window", n, off)
		}
		if w.at != at {
			mappings, at = mappings+1, w.at
		}
		if w.end != end {
			moves, end = moves+1, w.end
		}
		off += int64(len(r))
		if w.end < off || w.end-off > windowMax+int64(os.Getpagesize()) {
			t.Fatalf("after record %d, ending at %d: the window ends at %d", n, off, w.end)
		}
	}
	if mappings > 5 || moves < 12 {
		t.Errorf("%d mappings for %d moves of the window over %d bytes of records, want at most 5 mappings and at least 12 moves",
			mappings, moves, off)
	}
	data, err := os.ReadFile(log.Name())
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != w.end {
		t.Fatalf("the log is %d bytes, want it extended to the window's end, %d", len(data), w.end)
	}
	for i := range n {
		if got := data[i*1000 : (i+1)*1000]; !bytes.Equal(got, record(i)) {
			t.Fatalf("record %d reads back as %.20q…", i, got)
		}
	}
	if rest := data[off:]; len(bytes.Trim(rest, "\x00")) != 0 {
		t.Errorf("the %d bytes past the last record are not all zeros", len(rest))
	}
}
