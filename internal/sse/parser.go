package sse

import "bytes"

// DefaultMaxEventSize is the MaxEventSize used when that field is zero or
// negative: 1 MiB.
const DefaultMaxEventSize = 1 << 20

// bom is the UTF-8 byte order mark, skipped once at the start of a stream.
var bom = []byte{0xEF, 0xBB, 0xBF}

// maxTypes and maxTypeLen bound the cache of event type names.
const (
	maxTypes   = 8
	maxTypeLen = 64
)

// Parser reads a Server-Sent Events stream fed to it chunk by chunk,
// following the WHATWG EventSource parsing rules on bytes (no UTF-8
// decoding is done). It buffers only the current line and event. The zero
// value is ready to use. A Parser is not safe for concurrent use.
type Parser struct {
	// MaxEventSize bounds, in bytes, what the parser buffers for one event:
	// the event's lines (comments and line ends not counted) plus the line
	// being read. An event that grows beyond it is skipped up to its blank
	// line and Overflowed reports true. If zero or negative,
	// DefaultMaxEventSize is used.
	MaxEventSize int

	line  []byte   // start of the current line, when it spans chunks
	data  []byte   // data lines of the current event, each ending in '\n'
	typ   []byte   // event type of the current event
	id    string   // last event ID, kept across events
	types []string // recent event types, reused to spare an allocation
	size  int      // bytes of the current event's lines

	bomN     int  // bytes of a leading BOM matched so far
	started  bool // the stream's start, and any BOM, is behind us
	cr       bool // the last line ended in CR: an LF next is part of it
	inEvent  bool // a field line of the current event was read
	skip     bool // skipping an event larger than MaxEventSize
	midLine  bool // while skipping: the current line has bytes
	overflow bool
	stopped  bool
	events   int
	bytes    int64
}

// Feed parses chunk, the next bytes of the stream, and calls fn for each
// event completed by it. Events may span chunks and one chunk may complete
// many. Event.Data aliases the parser's buffer: it is valid only until fn
// returns and must be copied to be kept. fn must not call Feed.
//
// If fn returns false, Feed stops at once and returns false; the rest of
// the chunk is not parsed and later calls parse nothing and return false
// (Bytes still counts them). Otherwise Feed returns true.
func (p *Parser) Feed(chunk []byte, fn func(Event) bool) bool {
	p.bytes += int64(len(chunk))
	if p.stopped {
		return false
	}
	if !p.started {
		chunk = p.skipBOM(chunk)
	}
	for len(chunk) > 0 {
		if p.cr {
			p.cr = false
			if chunk[0] == '\n' {
				chunk = chunk[1:]
				continue
			}
		}
		i := lineEnd(chunk)
		if i < 0 {
			p.partial(chunk)
			break
		}
		p.cr = chunk[i] == '\r'
		line := chunk[:i]
		chunk = chunk[i+1:]
		if !p.endLine(line, fn) {
			p.stopped = true
			return false
		}
	}
	return true
}

// Events returns the number of events dispatched to Feed's fn so far.
func (p *Parser) Events() int { return p.events }

// Bytes returns the number of bytes fed so far.
func (p *Parser) Bytes() int64 { return p.bytes }

// Overflowed reports whether an event larger than MaxEventSize was skipped.
func (p *Parser) Overflowed() bool { return p.overflow }

// Pending reports whether the stream so far ends inside an event: part of
// a line, or field lines not yet ended by a blank line, are buffered. A
// stream that ends while Pending was cut mid-event. Comment lines alone do
// not make an event pending.
func (p *Parser) Pending() bool {
	return len(p.line) > 0 || p.inEvent || p.skip || (!p.started && p.bomN > 0)
}

// InEvent reports whether an event has begun and is not yet dispatched:
// a field line of it, whole or in part, was read since the last blank
// line. Comment lines (": keep-alive") begin no event.
func (p *Parser) InEvent() bool {
	return p.inEvent || p.skip || (len(p.line) > 0 && p.line[0] != ':')
}

// skipBOM consumes a leading byte order mark, which may span chunks, and
// returns the rest of chunk. Bytes that begin a BOM but do not complete it
// are kept as the start of the first line.
func (p *Parser) skipBOM(chunk []byte) []byte {
	for len(chunk) > 0 {
		if chunk[0] != bom[p.bomN] {
			p.started = true
			if p.bomN > 0 {
				p.partial(bom[:p.bomN])
			}
			return chunk
		}
		p.bomN++
		chunk = chunk[1:]
		if p.bomN == len(bom) {
			p.started = true
			break
		}
	}
	return chunk
}

// partial buffers b, the start of a line whose end has not arrived.
func (p *Parser) partial(b []byte) {
	if p.skip {
		p.midLine = true
		return
	}
	if p.size+len(p.line)+len(b) > p.max() {
		p.startSkip()
		p.midLine = true
		return
	}
	p.line = append(p.line, b...)
}

// endLine handles a line ended by a line break; b is its part in the
// current chunk. It returns false if fn did.
func (p *Parser) endLine(b []byte, fn func(Event) bool) bool {
	if p.skip {
		if !p.midLine && len(b) == 0 {
			p.skip, p.inEvent = false, false
		}
		p.midLine = false
		return true
	}
	n := len(p.line) + len(b)
	if n == 0 {
		return p.dispatch(fn)
	}
	if p.size+n > p.max() {
		p.startSkip()
		return true
	}
	line := b
	if len(p.line) > 0 {
		p.line = append(p.line, b...)
		line = p.line
	}
	p.field(line)
	p.line = p.line[:0]
	return true
}

// field processes one non-blank line.
func (p *Parser) field(line []byte) {
	if line[0] == ':' {
		return
	}
	p.size += len(line)
	p.inEvent = true
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "event":
		p.typ = append(p.typ[:0], value...)
	case "data":
		p.data = append(append(p.data, value...), '\n')
	case "id":
		if bytes.IndexByte(value, 0) < 0 && string(value) != p.id {
			p.id = string(value)
		}
	}
}

// dispatch ends the current event at a blank line and passes it to fn if
// it has data. It returns false if fn did.
func (p *Parser) dispatch(fn func(Event) bool) bool {
	data, typ := p.data, p.typ
	p.data, p.typ, p.size, p.inEvent = data[:0], typ[:0], 0, false
	if len(data) == 0 {
		return true
	}
	p.events++
	n := len(data) - 1 // drop the last '\n'
	return fn(Event{Type: p.typeName(typ), Data: data[:n:n], ID: p.id})
}

// typeName returns typ as a string, reusing a recent one when equal.
func (p *Parser) typeName(typ []byte) string {
	if len(typ) == 0 {
		return ""
	}
	for _, s := range p.types {
		if string(typ) == s {
			return s
		}
	}
	s := string(typ)
	if len(p.types) < maxTypes && len(s) <= maxTypeLen {
		p.types = append(p.types, s)
	}
	return s
}

// startSkip drops the current event, which outgrew MaxEventSize.
func (p *Parser) startSkip() {
	p.overflow, p.skip = true, true
	p.line, p.data, p.typ, p.size = p.line[:0], p.data[:0], p.typ[:0], 0
}

func (p *Parser) max() int {
	if p.MaxEventSize > 0 {
		return p.MaxEventSize
	}
	return DefaultMaxEventSize
}
