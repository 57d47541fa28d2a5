package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"

	"github.com/sluice-llm/sluice"
)

// MaxLineBytes is the longest attempt-log line Read accepts, without its
// newline. A longer line is counted as malformed and skipped.
const MaxLineBytes = 1 << 20

// Line is one upstream attempt as read from the attempt log: the log's
// own type, whose JSON names are the contract. Unknown fields are ignored.
type Line = sluice.Attempt

// Read reads attempt-log lines (JSONL) from r and calls fn with each one it
// can decode, in order. Blank lines are skipped. A line that is not a JSON
// object with a valid RFC 3339 "ts", or that is longer than MaxLineBytes, is
// counted in malformed and skipped: one bad line never stops the read. The
// error is that of r, never one of the content.
func Read(r io.Reader, fn func(Line)) (malformed int, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for {
		var tooLong bool
		buf, tooLong, err = readLine(br, buf[:0])
		switch {
		case tooLong:
			malformed++
		case len(bytes.TrimSpace(buf)) == 0:
		default:
			if l, ok := parseLine(buf); ok {
				fn(l)
			} else {
				malformed++
			}
		}
		if err == io.EOF {
			return malformed, nil
		}
		if err != nil {
			return malformed, err
		}
	}
}

// readLine appends the next line of br, without its line ending, to buf.
// A line longer than MaxLineBytes is read to its end but not kept, and
// reported as too long. The error is io.EOF after the last line.
func readLine(br *bufio.Reader, buf []byte) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			buf = append(buf, chunk...)
			if len(buf) > MaxLineBytes+2 {
				tooLong, buf = true, buf[:0]
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if len(buf) > MaxLineBytes {
			tooLong, buf = true, buf[:0]
		}
		return buf, tooLong, err
	}
}

// parseLine decodes one JSON object. It reports false for anything that is
// not an object or has no valid ts.
func parseLine(b []byte) (Line, bool) {
	var l Line
	if err := json.Unmarshal(b, &l); err != nil || l.TS.IsZero() {
		return Line{}, false
	}
	return l, true
}
