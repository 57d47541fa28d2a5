package state

import (
	"runtime"
	"runtime/debug"
	"sync/atomic"
)

// readStatus says what a lock-free read of a state file found.
type readStatus uint8

const (
	readOK      readStatus = iota
	readEmpty              // a zeroed header: a new or zero-filled file
	readGarbage            // a wrong magic number or length
	readBusy               // a write stayed in progress for too long
	readFault              // the mapping faulted: the file was cut short
)

// spinTries bounds how often a reader retries while a write is in
// progress before it waits for the file lock instead.
const spinTries = 1000

// words is a state file seen through its shared mapping. Every access is
// atomic: other processes write the same memory.
type words = [fileWords]uint64

// readWords copies the payload of w into p with the sequence lock: it
// retries while the sequence is odd (a write in progress) or changed
// during the copy, so p is never torn. It takes no lock and writes
// nothing. seq and gen are the header values the copy belongs to.
func readWords(w *words, p *payload) (st readStatus, seq, gen uint64) {
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	for try := range spinTries {
		s1 := atomic.LoadUint64(&w[wSeq])
		if s1&1 == 0 {
			st, gen = copyPayload(w, p)
			if atomic.LoadUint64(&w[wSeq]) == s1 {
				return st, s1, gen
			}
		}
		if try > 16 {
			runtime.Gosched()
		}
	}
	return readBusy, 0, 0
}

func copyPayload(w *words, p *payload) (readStatus, uint64) {
	magic, gen := atomic.LoadUint64(&w[wMagic]), atomic.LoadUint64(&w[wGen])
	if magic == 0 && gen == 0 {
		*p = payload{}
		return readEmpty, 0
	}
	n := atomic.LoadUint64(&w[wLen])
	if magic != fileMagic || n > payloadMax {
		return readGarbage, 0
	}
	p.n = int(n)
	for i := range (p.n + 7) / 8 {
		p.w[i] = atomic.LoadUint64(&w[headerWords+i])
	}
	return readOK, gen
}

// readHeld copies the payload of w into p for a caller holding the file
// lock, when no other writer can be active: an odd sequence is the mark of
// a writer that died mid-write and reads as readBusy.
func readHeld(w *words, p *payload) (st readStatus, gen uint64) {
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if atomic.LoadUint64(&w[wSeq])&1 != 0 {
		return readBusy, 0
	}
	return copyPayload(w, p)
}

// writeWords stores p in w under the sequence lock. The caller holds the
// file lock, so writers never interleave; a sequence left odd by a writer
// that died mid-write is moved on to the next even value. A fresh gen is
// drawn when the header was not valid. seq is the sequence the write
// leaves.
func writeWords(w *words, p *payload, gen uint64) (st readStatus, seq uint64) {
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	base := (atomic.LoadUint64(&w[wSeq]) + 1) &^ 1
	atomic.StoreUint64(&w[wSeq], base+1)
	atomic.StoreUint64(&w[wMagic], fileMagic)
	atomic.StoreUint64(&w[wGen], gen)
	atomic.StoreUint64(&w[wLen], uint64(p.n))
	for i := range payloadWords {
		atomic.StoreUint64(&w[headerWords+i], p.w[i])
	}
	atomic.StoreUint64(&w[wSeq], base+2)
	return readOK, base + 2
}

// clearWords zeroes w under the sequence lock, so that it reads as
// readEmpty; the caller holds the file lock.
func clearWords(w *words) (st readStatus) {
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	seq := atomic.LoadUint64(&w[wSeq])
	base := (seq + 1) &^ 1
	atomic.StoreUint64(&w[wSeq], base+1)
	for i := range w {
		if i != wSeq {
			atomic.StoreUint64(&w[i], 0)
		}
	}
	atomic.StoreUint64(&w[wSeq], base+2)
	return readOK
}

// recoverFault turns a memory fault in a mapping (a state file truncated
// by someone else) into readFault instead of a crash.
func recoverFault(st *readStatus) {
	r := recover()
	if r == nil {
		return
	}
	if _, ok := r.(runtime.Error); !ok {
		panic(r)
	}
	*st = readFault
}
