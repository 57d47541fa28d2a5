package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

const goodLine = `{"ts":"2025-03-04T10:00:00.123Z","request_id":"r1","attempt":1,"provider":"openai","model":"m","status":200,"outcome":"ok","latency_ms":12.5,"breaker":"closed"}`

// bigLine returns a valid attempt line of exactly n bytes, padded with an
// unknown field.
func bigLine(n int) string {
	head := `{"ts":"2025-03-04T10:00:00Z","pad":"`
	tail := `"}`
	return head + strings.Repeat("x", n-len(head)-len(tail)) + tail
}

// testMaxLine is the line bound TestRead sets: larger than the reader's
// buffer, smaller than MaxLineBytes, so that the bound is tested without
// lines of many megabytes.
const testMaxLine = 200 << 10

func TestRead(t *testing.T) {
	defer func(m int) { maxLine = m }(maxLine)
	maxLine = testMaxLine
	tests := []struct {
		name          string
		in            string
		lines, broken int
	}{
		{"empty", "", 0, 0},
		{"one", goodLine + "\n", 1, 0},
		{"no final newline", goodLine, 1, 0},
		{"crlf", goodLine + "\r\n" + goodLine + "\r\n", 2, 0},
		{"blank lines skipped", "\n  \n" + goodLine + "\n\n", 1, 0},
		{"unknown fields ignored", `{"ts":"2025-03-04T10:00:00Z","new_field":[1,2],"outcome":"ok"}` + "\n", 1, 0},
		{"garbage", "not json\n" + goodLine + "\n", 1, 1},
		{"truncated last line", goodLine + "\n" + goodLine[:40], 1, 1},
		{"no ts", `{"request_id":"x"}` + "\n", 0, 1},
		{"bad ts", `{"ts":"yesterday"}` + "\n", 0, 1},
		{"null", "null\n", 0, 1},
		{"array", "[1]\n", 0, 1},
		{"wrong type", `{"ts":"2025-03-04T10:00:00Z","status":"200"}` + "\n", 0, 1},
		{"two objects on a line", goodLine + goodLine + "\n", 0, 1},
		{"line of the bound", bigLine(testMaxLine) + "\n" + goodLine + "\n", 2, 0},
		{"line over the bound", bigLine(testMaxLine+1) + "\n" + goodLine + "\n", 1, 1},
		{"huge line at end", goodLine + "\n" + bigLine(3*testMaxLine), 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []Line
			broken, err := Read(strings.NewReader(tc.in), func(l Line) { got = append(got, l) })
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.lines || broken != tc.broken {
				t.Errorf("lines, malformed = %d, %d; want %d, %d", len(got), broken, tc.lines, tc.broken)
			}
		})
	}
}

// TestReadLongFoldedLine: a folded refusal line listing a storm's second
// of ids, longer than a megabyte, is read whole.
func TestReadLongFoldedLine(t *testing.T) {
	ids := make([]string, 60000)
	for i := range ids {
		ids[i] = fmt.Sprintf("%024x", i)
	}
	l := Line{TS: time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC), RequestID: ids[0], Attempt: 1,
		Outcome: "circuit_open", Refused: len(ids), RefusedIDs: ids}
	data := jsonl(t, []Line{l})
	if len(data) < 1<<20 {
		t.Fatalf("line of %d bytes; the test wants one over a megabyte", len(data))
	}
	var got []Line
	broken, err := Read(bytes.NewReader(data), func(l Line) { got = append(got, l) })
	if err != nil || broken != 0 || len(got) != 1 || len(got[0].RefusedIDs) != len(ids) {
		t.Fatalf("read %d lines, %d malformed, %v", len(got), broken, err)
	}
	if s := Summarize(got); s.Calls != len(ids) || s.Incident.FailedCalls != len(ids) {
		t.Errorf("%d calls, %d failed; want %d each", s.Calls, s.Incident.FailedCalls, len(ids))
	}
}

func TestReadFields(t *testing.T) {
	var got Line
	if _, err := Read(strings.NewReader(goodLine), func(l Line) { got = l }); err != nil {
		t.Fatal(err)
	}
	if got.RequestID != "r1" || got.Status != 200 || got.LatencyMS != 12.5 || got.TS.Nanosecond() != 123e6 || got.Breaker != "closed" {
		t.Errorf("decoded %+v", got)
	}
}

func TestReadError(t *testing.T) {
	boom := errors.New("boom")
	n := 0
	_, err := Read(errReader{strings.NewReader(goodLine + "\n"), boom}, func(Line) { n++ })
	if !errors.Is(err, boom) || n != 1 {
		t.Errorf("err = %v after %d lines; want boom after 1", err, n)
	}
}

// errReader reads r, then fails with err.
type errReader struct {
	r   *strings.Reader
	err error
}

func (e errReader) Read(p []byte) (int, error) {
	if e.r.Len() == 0 {
		return 0, e.err
	}
	return e.r.Read(p)
}

// FuzzRead feeds arbitrary bytes to the reader and the whole report: every
// non-blank line is either decoded or counted, and nothing panics or
// produces output that fails to encode.
func FuzzRead(f *testing.F) {
	f.Add([]byte(goodLine + "\n"))
	f.Add([]byte("garbage\n\n" + goodLine))
	f.Add([]byte(`{"ts":"0001-01-01T00:00:01Z","latency_ms":1e308,"cost_usd":1e308}` + "\n" +
		`{"ts":"9999-12-31T23:59:59Z","latency_ms":-5,"cost_usd":1e308,"breaker":"open","status":429}`))
	f.Add([]byte(`{"ts":"2025-03-04T10:00:00Z","breaker":"open","outcome":"circuit_open"}` + "\r\n" +
		`{"ts":"2025-03-04T10:00:01Z","breaker":"half_open","request_id":"<&>"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var lines []Line
		broken, err := Read(bytes.NewReader(data), func(l Line) { lines = append(lines, l) })
		if err != nil {
			t.Fatal(err)
		}
		nonBlank := 0
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(l)) > 0 {
				nonBlank++
			}
		}
		if len(lines)+broken != nonBlank {
			t.Errorf("%d lines + %d malformed != %d non-blank lines", len(lines), broken, nonBlank)
		}
		s := Summarize(lines)
		if _, err := json.Marshal(s); err != nil {
			t.Errorf("summary does not encode: %v", err)
		}
		var b bytes.Buffer
		if err := WriteText(&b, &s); err != nil {
			t.Fatal(err)
		}
		b.Reset()
		if err := WriteHTML(&b, &s); err != nil {
			t.Fatal(err)
		}
		if err := wellFormed(b.Bytes()); err != nil {
			t.Errorf("page is not well-formed: %v", err)
		}
	})
}
