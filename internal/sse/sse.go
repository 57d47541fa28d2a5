// Package sse reads and writes the Server-Sent Events wire format
// (text/event-stream) as the WHATWG HTML standard defines it.
//
// The Parser observes a stream that is relayed elsewhere: it is fed copies
// of the chunks as they pass and never alters or holds back the relayed
// bytes. AppendEvent and AppendComment write events and comments.
package sse

import "bytes"

// Event is one dispatched event.
type Event struct {
	// Type is the value of the event's "event" field; "" when absent,
	// which means "message".
	Type string
	// Data is the event's "data" lines joined with "\n".
	Data []byte
	// ID is the value of the last "id" field read so far in the stream,
	// this event's or an earlier one's; "" when none.
	ID string
}

// IsDone reports whether data is the OpenAI stream terminator "[DONE]",
// surrounding white space ignored.
func IsDone(data []byte) bool {
	return string(bytes.TrimSpace(data)) == "[DONE]"
}

// AppendEvent appends to dst an event of type typ carrying data, and
// returns the extended slice. It writes an "event: typ" line (omitted when
// typ is ""), one "data: " line per line of data (lines split at "\n",
// "\r\n" or "\r"), then a blank line. Line breaks in typ are dropped, so
// typ cannot end the line early.
func AppendEvent(dst []byte, typ string, data []byte) []byte {
	if typ != "" {
		dst = append(dst, "event: "...)
		for i := 0; i < len(typ); i++ {
			if c := typ[i]; c != '\r' && c != '\n' {
				dst = append(dst, c)
			}
		}
		dst = append(dst, '\n')
	}
	dst = appendLines(dst, "data: ", data)
	return append(dst, '\n')
}

// AppendComment appends to dst a comment holding text, one ": " line per
// line of text, and returns the extended slice. A parser ignores comments;
// servers send them to keep an idle connection open.
func AppendComment(dst []byte, text string) []byte {
	return appendLines(dst, ": ", []byte(text))
}

// appendLines appends one line, prefix first, for each line of text.
func appendLines(dst []byte, prefix string, text []byte) []byte {
	for {
		i := lineEnd(text)
		if i < 0 {
			break
		}
		dst = append(append(append(dst, prefix...), text[:i]...), '\n')
		if text[i] == '\r' && i+1 < len(text) && text[i+1] == '\n' {
			i++
		}
		text = text[i+1:]
	}
	return append(append(append(dst, prefix...), text...), '\n')
}

// lineEnd returns the index of the first CR or LF in b, or -1 if none.
func lineEnd(b []byte) int {
	n := bytes.IndexByte(b, '\n')
	head := b
	if n >= 0 {
		head = b[:n]
	}
	if r := bytes.IndexByte(head, '\r'); r >= 0 {
		return r
	}
	return n
}
