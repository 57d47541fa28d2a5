package sluice

import (
	"bytes"
	"io"
	"slices"
	"time"

	"github.com/sluice-llm/sluice/dialect"
)

// maxPeek bounds how much of a stream is read, before its first event is
// complete, to judge that event.
const maxPeek = 64 << 10

// peek reads a stream until its first event is complete, under the
// first-byte timer until that event begins and then the idle timer. It
// returns the bytes read and, when the first event is a provider error,
// its data and the status it stands for. Comment lines before it (": keep-alive", OpenRouter's
// ": OPENROUTER PROCESSING" while a model is queued) are no event: the
// first-byte timer keeps running through them. The bytes are read
// straight into the buffer returned, which grows only for a first event
// larger than peekChunk.
func (a *attempt) peek(rc io.Reader, p dialect.Stream) (buf []byte, errEvent []byte, errStatus int, err error) {
	done, begun := false, false
	buf = make([]byte, 0, peekChunk)
	for !done && len(buf) < maxPeek {
		if begun {
			a.arm(&a.idle)
		}
		if cap(buf)-len(buf) < peekChunk/2 {
			buf = slices.Grow(buf, peekChunk)
		}
		n, rerr := rc.Read(buf[len(buf):cap(buf)])
		if n > 0 {
			chunk := buf[len(buf) : len(buf)+n]
			buf = buf[:len(buf)+n]
			p.Feed(chunk, func(ev dialect.Event) bool {
				if ev.Status != 0 {
					errEvent, errStatus = bytes.Clone(ev.Data), ev.Status
				}
				done = true
				return false
			})
			if !begun && (done || p.InEvent()) {
				begun = true
				a.ttfb = time.Since(a.start)
			}
		}
		if rerr != nil {
			if rerr == io.EOF && begun {
				break
			}
			if rerr == io.EOF { // nothing, or comments only: cut before the first event
				rerr = io.ErrUnexpectedEOF
			}
			a.disarm()
			return buf, nil, 0, a.cause(rerr)
		}
	}
	a.disarm()
	return buf, errEvent, errStatus, nil
}

// peekChunk is the least room peek offers each Read.
const peekChunk = 4096
