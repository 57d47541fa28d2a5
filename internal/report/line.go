package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"time"

	"github.com/sluice-llm/sluice"
)

// MaxLineBytes is the longest attempt-log line Read accepts, without its
// newline. A longer line is counted as malformed and skipped. A folded
// refusal line lists the ids of the calls it counts, one second of a
// breaker's refusals: at 50,000 refusals a second, some 1.4 MB.
const MaxLineBytes = 16 << 20

// maxLine is MaxLineBytes, smaller in tests of the bound.
var maxLine = MaxLineBytes

// Line is one attempt as read from the attempt log: the fields of
// sluice.Attempt, whose JSON names are the contract, and those of a folded
// refusal line. Unknown fields are ignored.
type Line struct {
	TS                time.Time      `json:"ts"`
	RequestID         string         `json:"request_id"`
	Attempt           int            `json:"attempt"`
	Policy            string         `json:"policy"`
	Provider          string         `json:"provider"`
	Model             string         `json:"model"`
	Method            string         `json:"method"`
	Path              string         `json:"path"`
	Status            int            `json:"status"`
	Outcome           sluice.Outcome `json:"outcome"`
	Error             string         `json:"error"`
	LatencyMS         float64        `json:"latency_ms"`
	TTFBMS            float64        `json:"ttfb_ms"`
	BytesOut          int64          `json:"bytes_out"`
	BytesIn           int64          `json:"bytes_in"`
	Breaker           string         `json:"breaker"`
	RetryInMS         float64        `json:"retry_in_ms"`
	QueuedMS          float64        `json:"queued_ms,omitempty"`
	Priority          string         `json:"priority,omitempty"`
	Key               string         `json:"key,omitempty"`
	UpstreamRequestID string         `json:"upstream_request_id,omitempty"`
	CostUSD           float64        `json:"cost_usd,omitempty"`
	Stream            bool           `json:"stream"`
	// ReplayOf is, on a call answered from a kept answer (outcome
	// replayed), the request id of the call that answered first.
	ReplayOf string `json:"replay_of,omitempty"`
	// Translated is, on an attempt to a fallback of another dialect, the
	// translation (openai->anthropic).
	Translated string `json:"translated,omitempty"`
	// Hedge is, on the lines of a hedge's attempts, sent; on the line of
	// a call whose hedge was refused, refused.
	Hedge string `json:"hedge,omitempty"`
	// SavedUSD is, on a replay's line, what the call it replayed cost (0
	// on lines written before the log said it).
	SavedUSD float64 `json:"saved_usd,omitempty"`
	// Idempotency is, on a line of a call with an Idempotency-Key, what
	// became of its answer: kept, too_large, credential, mark_lost or
	// store_error.
	Idempotency string `json:"idempotency,omitempty"`

	// Refused is, on a refusal line, how many refused calls the line
	// stands for: the log folds the refusals of one breaker, budget or
	// rate limit into at most one line a second. 0 on other lines.
	Refused int `json:"refused,omitempty"`
	// RefusedIDs are the request ids of the calls a refusal line stands
	// for, in order; the line's own request_id is the last. Lines written
	// before the log listed them have Refused without RefusedIDs.
	RefusedIDs []string `json:"refused_ids,omitempty"`
}

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
			if len(buf) > maxLine+2 {
				tooLong, buf = true, buf[:0]
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		buf = bytes.TrimSuffix(buf, []byte("\n"))
		buf = bytes.TrimSuffix(buf, []byte("\r"))
		if len(buf) > maxLine {
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
