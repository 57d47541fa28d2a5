package idempotency

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"time"
)

// Verdict is what Begin found for an ID.
type Verdict int

const (
	// Run: no answer is kept and no live mark is held; the mark is now
	// the caller's (Result.Mark), to end with Keep or Release.
	Run Verdict = iota
	// Replay: an answer is kept for this fingerprint (Result.Answer).
	Replay
	// InFlight: another call holds a live mark with this fingerprint
	// until Result.Until.
	InFlight
	// Conflict: the ID's kept answer, or its live mark, is of another
	// fingerprint: the key was reused for another payload.
	Conflict
)

func (v Verdict) String() string {
	switch v {
	case Run:
		return "run"
	case Replay:
		return "replay"
	case InFlight:
		return "in_flight"
	case Conflict:
		return "conflict"
	}
	return "verdict(?)"
}

// Result is what Begin answers.
type Result struct {
	Verdict Verdict
	// Mark is the mark taken, with Run.
	Mark Mark
	// Answer is the kept answer, with Replay.
	Answer *Answer
	// Until is when the live mark's lease ends, with InFlight, and with
	// Conflict against a live mark (zero against a kept answer).
	Until time.Time
}

// Mark is an in-flight mark taken by Begin: its holder's proof to Keep
// and Release.
type Mark struct {
	// ID is the store name the mark was taken for (Key.ID).
	ID string
	// Token tells this holder from any later holder of the same ID.
	Token string
	// Until is when the mark's lease ends: past it the mark counts as
	// absent, and the next Begin takes it.
	Until time.Time

	fp [32]byte // the fingerprint it was taken for, where a store needs it
}

// Store keeps in-flight marks and kept answers by ID. Implementations are
// safe for concurrent use: Memory, File and redisstore.Store.
type Store interface {
	// Begin replays the answer kept for id if its fingerprint is fp
	// (Replay), refuses if it was kept for another fingerprint (Conflict);
	// else, if a live mark is held, reports it (InFlight, or Conflict for
	// another fingerprint) with its lease's end; else takes the mark,
	// atomically, for lease from now (Run). An answer or mark whose time
	// has passed counts as absent.
	Begin(id string, fp [32]byte, lease time.Duration, now time.Time) (Result, error)

	// Keep keeps a under the mark's ID for ttl from now (Answer.Kept set to
	// now) and clears the mark, in one atomic step: a reader sees the whole
	// answer or none. Only the mark's holder may: if the mark was cleared
	// or taken by another since (its lease ran out), nothing is written and
	// the error is ErrMarkLost. An answer over the store's MaxAnswer is not
	// kept: the mark is cleared and the error is ErrTooLarge.
	Keep(m Mark, a *Answer, ttl time.Duration, now time.Time) error

	// Release clears the mark, keeping nothing: the call ended without an
	// answer to keep (an error, a timeout, a cut stream). Releasing a mark
	// no longer held does nothing; Release may be called any number of
	// times, after Keep too.
	Release(m Mark) error
}

// ErrMarkLost is Keep's error when the mark is no longer its holder's: its
// lease ran out and it was cleared or taken by another call. Nothing was
// kept.
var ErrMarkLost = errors.New("idempotency: the in-flight mark is no longer held (its lease ran out): answer not kept")

// ErrTooLarge is Keep's error for an answer over the store's MaxAnswer.
// Nothing was kept and the mark was cleared.
var ErrTooLarge = errors.New("idempotency: answer over max_answer: not kept")

// DefaultMaxAnswer is the default of a store's MaxAnswer: 8 MiB.
const DefaultMaxAnswer = 8 << 20

// DefaultMaxBytes is the default of a store's MaxBytes: 512 MiB.
const DefaultMaxBytes = 512 << 20

// NewToken returns a fresh random mark token: 128 bits, in hex. A token
// tells one holder of a mark from a later one and guards nothing, so it
// comes from the runtime's generator (ChaCha8, seeded by the system), not
// from a call to the system's for every mark.
func NewToken() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	return hex.EncodeToString(b[:])
}

// orDefault returns v, or def when v is not positive.
func orDefault[T ~int | ~int64](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}
