package state

import (
	"hash/fnv"
	"runtime/debug"
	"sync/atomic"
)

// The generation file, ".generations" in the state directory, is one
// shared page of genWords counters. A process that creates or removes a
// state file adds one to the counter of that file's name (a hash picks it
// within its kind's half of the page) once the file is in place or gone. A process
// that found a state file missing, or mapped it, remembers the counter it
// read just before looking; while the counter has not moved, what it found
// still holds. That is how a record with no file reads as missing with one
// atomic load, and how a process learns at once that another one created
// or removed a state file it uses.
const (
	genWords    = 512
	genSize     = genWords * 8
	genPerKind  = genWords / 2
	genFileName = ".generations"
)

// genPage is the generation file as this process maps it.
type genPage struct {
	path string
	mem  []byte
	w    *[genWords]uint64
}

// genIndex picks the counter of a state file by its file name, in the
// given half of the page.
func genIndex(half int, file string) int {
	h := fnv.New32a()
	h.Write([]byte(file))
	return half*genPerKind + int(h.Sum32()%genPerKind)
}

// load returns counter i; ok is false if the file was cut short under it.
func (g *genPage) load(i int) (v uint64, ok bool) {
	var st readStatus
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return atomic.LoadUint64(&g.w[i]), true
}

// bump adds one to counter i.
func (g *genPage) bump(i int) {
	if !g.tryBump(i) {
		g.repair()
		g.tryBump(i)
	}
}

func (g *genPage) tryBump(i int) (ok bool) {
	var st readStatus
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	atomic.AddUint64(&g.w[i], 1)
	return true
}

// current returns counter i, repairing a generation file cut short.
func (g *genPage) current(i int) uint64 {
	v, ok := g.load(i)
	if !ok {
		g.repair()
		v, _ = g.load(i)
	}
	return v
}
