package state

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// slot is one named state file as this process holds it: open and mapped
// into a page of the store's region, or not.
type slot struct {
	name   string
	path   string
	kind   *Kind
	gi     int // its counter in the generation page
	view   atomic.Pointer[view]
	used   atomic.Bool  // used since the store last looked
	pins   atomic.Int32 // lock-free writers at work on the mapped page (Counters)
	warned atomic.Bool

	mu         sync.Mutex // serialises this process's slow reads, writers, opening and closing
	m          *mapping   // the open file, nil if none
	checked    bool       // m, or the lack of a file, was seen at counter checkedGen
	checkedGen uint64
	dead       bool        // dropped from the store's table: look the name up again
	gone       atomic.Bool // dead, for a Record to see without s.mu
	pending    *view       // what the write updateHeld is making holds, decoded (Update)
}

// view is what the fast path of Load trusts while the slot's generation
// counter stays at dirGen and, for a mapped file, the file still holds the
// write (seq, gen): the record its kind decoded as val. A view with no
// mapping is a name with no file. A view is replaced, never changed; it is cleared before
// its mapping is closed, and a reader checks it is still the slot's view
// after reading through its mapping.
type view struct {
	m        *mapping
	dirGen   uint64
	seq, gen uint64
	val      any
}

// action is what an update does with the payload it was shown.
type action uint8

const (
	leave  action = iota // write nothing
	write                // write the payload
	remove               // remove the state file: its record is idle or empty
)

// drain waits until no lock-free writer works through s's page; called
// once s's view is cleared, before the page is mapped over or released.
func (s *slot) drain() {
	for s.pins.Load() != 0 {
		runtime.Gosched()
	}
}

func (s *slot) touch() {
	if !s.used.Load() {
		s.used.Store(true)
	}
}

// fresh reports whether v still describes s: the generation counter has
// not moved, the mapped file holds the same write with none in progress,
// and v is still the slot's view. Six atomic loads, two with no file.
func (f *File) fresh(s *slot, v *view) (same bool) {
	var st readStatus
	defer recoverFault(&st)
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	if atomic.LoadUint64(&f.gens.w[s.gi]) != v.dirGen {
		return false
	}
	if m := v.m; m != nil {
		s1 := atomic.LoadUint64(&m.w[wSeq])
		if s1 != v.seq || atomic.LoadUint64(&m.w[wMagic]) != fileMagic || atomic.LoadUint64(&m.w[wGen]) != v.gen ||
			atomic.LoadUint64(&m.w[wSeq]) != s1 {
			return false
		}
	}
	return s.view.Load() == v
}

// slot returns the slot of name of kind k, making one on first use; it
// opens nothing.
func (f *File) slot(k *Kind, name string) (*slot, error) {
	if f.closed.Load() {
		return nil, ErrClosed
	}
	if v, ok := k.slots.Load(name); ok {
		return v.(*slot), nil
	}
	stem, err := escapeName(name)
	if err != nil {
		return nil, err
	}
	file := stem + k.ext
	s := &slot{name: name, path: filepath.Join(f.dir, file), kind: k, gi: genIndex(k.half, file)}
	v, loaded := k.slots.LoadOrStore(name, s)
	if !loaded && f.nslots.Add(1) > f.pruneAt.Load() {
		f.prune()
	}
	return v.(*slot), nil
}

// prunePoint is the table size at which the next prune runs.
func (f *File) prunePoint(n int64) int64 {
	return max(16*int64(len(f.pages)), 1024, 2*n)
}

// prune drops from the table the slots with no open file that were not
// used since the last prune, so the table keeps only names in recent use.
func (f *File) prune() {
	if !f.mu.TryLock() {
		return
	}
	defer f.mu.Unlock()
	for _, k := range f.kinds {
		k.slots.Range(func(key, v any) bool {
			s := v.(*slot)
			if s.used.Load() {
				s.used.Store(false)
				return true
			}
			if !s.mu.TryLock() {
				return true
			}
			if s.m == nil && !s.dead {
				s.dead = true
				s.gone.Store(true)
				if k.slots.CompareAndDelete(key, s) {
					f.nslots.Add(-1)
				}
			}
			s.mu.Unlock()
			return true
		})
	}
	f.pruneAt.Store(f.prunePoint(f.nslots.Load()))
}

// lockSlot locks s, or the slot that replaced it in the table.
func (f *File) lockSlot(s *slot) (*slot, error) {
	for {
		s.mu.Lock()
		if f.closed.Load() {
			s.mu.Unlock()
			return nil, ErrClosed
		}
		if !s.dead {
			return s, nil
		}
		s.mu.Unlock()
		var err error
		if s, err = f.slot(s.kind, s.name); err != nil {
			return nil, err
		}
	}
}

// current returns s's open file, nil if it has none, and the generation
// counter it was checked at. It checks the directory only when the counter
// moved since the last check. The caller holds s.mu.
func (f *File) current(s *slot) (*mapping, uint64, error) {
	g := f.gens.current(s.gi)
	if s.checked && s.checkedGen == g {
		return s.m, g, nil
	}
	if s.m != nil {
		if _, replaced := s.m.check(s.path); !replaced {
			s.checked, s.checkedGen = true, g
			return s.m, g, nil
		}
		f.detach(s, true)
	}
	fd, exists, _, err := openState(s.path, nil, false)
	if err != nil {
		return nil, 0, err
	}
	if exists {
		if _, err := f.attach(s, fd); err != nil {
			return nil, 0, err
		}
	}
	s.checked, s.checkedGen = true, g
	return s.m, g, nil
}

// update is the one locked read-modify-write of a state file.
func (f *File) update(s *slot, fn func(p *payload, st readStatus) (action, error)) error {
	s, err := f.lockSlot(s)
	if err != nil {
		return err
	}
	defer s.mu.Unlock()
	return f.updateHeld(s, fn)
}

// updateHeld takes the file lock, reads the payload, lets fn change it and
// writes it, or removes the file, if fn says so. A name with no file is
// shown fn as empty first, and gets a file only if fn writes. A file that
// was removed or replaced is reopened, one cut short is extended first.
// If fn left s.pending, a view holding the decoded value of what it
// writes, that view becomes the slot's once the write is in. The caller
// holds s.mu.
func (f *File) updateHeld(s *slot, fn func(p *payload, st readStatus) (action, error)) error {
	defer func() { s.pending = nil }()
	if f.closed.Load() {
		return ErrClosed
	}
	m, _, err := f.current(s)
	if err != nil {
		return err
	}
	if m == nil {
		var p payload
		if a, err := fn(&p, readEmpty); err != nil || a != write {
			return err
		}
		if _, err := f.create(s); err != nil {
			return err
		}
	}
	m, err = f.lockMapping(s)
	if err != nil {
		return fmt.Errorf("state: lock state file %s: %w", s.path, err)
	}
	var p payload
	st, gen := readHeld(m.w, &p)
	a, err := fn(&p, st)
	if err != nil || a == leave {
		m.unlock()
		return err
	}
	if a == remove {
		return f.removeHeld(s, m)
	}
	if st != readOK {
		gen = rand.Uint64() | 1
		s.warned.Store(false)
	}
	res, seq := writeWords(m.w, &p, gen)
	if v := s.pending; v != nil && res == readOK {
		v.m, v.dirGen, v.seq, v.gen = m, f.gens.current(s.gi), seq, gen
		s.view.Store(v)
	}
	m.unlock()
	if res == readFault {
		return fmt.Errorf("state: write state file %s: the file was cut short while written", s.path)
	}
	return nil
}

// removeHeld removes s's state file under its lock: it is cleared first,
// so that a process still mapping it reads it as empty, then unlinked, and
// the generation counter is bumped so every process lets go of it. The
// caller holds s.mu and the file lock, which removeHeld releases.
func (f *File) removeHeld(s *slot, m *mapping) error {
	clearWords(m.w)
	err := removeState(s.path)
	if err == nil {
		f.gens.bump(s.gi)
	}
	m.unlock()
	f.detach(s, true)
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	return nil
}

// lockMapping gives up on a file that others keep removing or replacing
// before it could lock it once it has mapped it again maxReopen times and
// for at least reopenFor: a count alone can run out in a moment on a
// loaded machine, where a process that removes records in a loop keeps
// winning the race.
const (
	maxReopen = 100
	reopenFor = 2 * time.Second
)

// lockMapping takes the file lock of s's file, reopening the file first if
// it was removed or replaced since it was mapped. The caller holds s.mu
// and s has a file.
func (f *File) lockMapping(s *slot) (*mapping, error) {
	m := s.m
	var size int64
	var start time.Time
	for try := 0; ; try++ {
		if err := m.lock(); err != nil {
			return nil, err
		}
		var replaced bool
		if size, replaced = m.check(s.path); !replaced {
			break
		}
		m.unlock()
		if try == 0 {
			start = time.Now()
		}
		if try >= maxReopen && time.Since(start) >= reopenFor {
			return nil, fmt.Errorf("state file %s was replaced %d times in %v while it was being locked", s.path, try+1, time.Since(start).Round(time.Millisecond))
		}
		if err := f.reopen(s); err != nil {
			return nil, err
		}
		m = s.m
	}
	if size < fileSize {
		f.warnDamaged(s, "cut short")
		if err := m.grow(); err != nil {
			m.unlock()
			return nil, err
		}
	}
	return m, nil
}
