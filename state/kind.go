package state

import (
	"bytes"
	"fmt"
	"sync"
)

// recordExt is the extension of the File's own records.
const recordExt = ".record"

// KindOptions describes a kind of record. The zero value is a kind of
// plain bytes.
type KindOptions struct {
	// Blank is the record a new file of the kind holds from its creation
	// until its first write is in, and what a damaged record is rewritten
	// to when a reader has to repair it. It holds at most MaxRecord bytes.
	// If nil, a new file holds no record.
	Blank []byte

	// Encode appends the encoding of v, a value Update's fn returned, to
	// dst and returns the result: at most MaxRecord bytes, Decode's
	// inverse. If nil, Update cannot be used.
	Encode func(dst []byte, v any) []byte

	// Decode turns a record's bytes, b, into the value Load returns (and
	// Update shows); ok is false for bytes that are not a record of the
	// kind, which then read as damaged. b is valid only during the call:
	// Decode copies what it keeps of it. Load keeps the value and returns
	// it again, to every caller, until the record changes: nobody may
	// change it. If nil, Load returns a copy of the record's bytes, a
	// []byte.
	Decode func(b []byte) (v any, ok bool)
}

// Kind is one kind of record in a File: the records whose files end in the
// kind's extension, read (Load) and changed (Transform, Update) as its user
// decodes them. A Kind is made by File.Kind and is safe for concurrent
// use.
type Kind struct {
	f        *File
	ext      string
	half     int // of the generation page
	blank    payload
	decode   func(b []byte) (any, bool)
	encode   func(dst []byte, v any) []byte
	check    bool     // Transform shows fn a record Decode rejects as nil
	counters bool     // a kind of counters (Counters), changed only by atomic operations
	slots    sync.Map // name → *slot
}

// Kind returns the kind of record whose files end in ext, a dot followed
// by one to sixteen lowercase ASCII letters (".breaker"). The first call
// for an extension makes the kind with opts; a later one returns the same
// Kind and ignores opts, and Kind(".record", …) returns the File's own
// records. The kinds of a File share its open files and its MaxOpen
// budget. Kind panics if ext is not a valid extension or
// opts.Blank is longer than MaxRecord.
func (f *File) Kind(ext string, opts KindOptions) *Kind {
	return f.kind(ext, opts, false)
}

// kind returns the kind of ext, making it if it is new; a kind of
// counters is made only by Counters.
func (f *File) kind(ext string, opts KindOptions, counters bool) *Kind {
	if !validExt(ext) {
		panic(fmt.Sprintf("state: kind extension %q is not a dot and 1 to 16 lowercase letters", ext))
	}
	if len(opts.Blank) > payloadMax {
		panic(fmt.Sprintf("state: blank record of kind %s is %d bytes, more than MaxRecord", ext, len(opts.Blank)))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range f.kinds {
		if k.ext != ext {
			continue
		}
		if k.counters != counters {
			panic(fmt.Sprintf("state: kind %s is a kind of counters for Counters only", ext))
		}
		return k
	}
	k := newKind(f, ext, opts)
	k.counters = counters
	f.kinds = append(f.kinds, k)
	return k
}

// newKind makes a kind. The File's own records count their files in the
// upper half of the generation page, every other kind in the lower half,
// as the layout has always had it.
func newKind(f *File, ext string, opts KindOptions) *Kind {
	k := &Kind{f: f, ext: ext, decode: opts.Decode, encode: opts.Encode, check: opts.Decode != nil}
	if ext == recordExt {
		k.half = 1
	}
	if k.decode == nil {
		k.decode = func(b []byte) (any, bool) { return bytes.Clone(b), true }
	}
	k.blank.setBytes(opts.Blank)
	return k
}

func validExt(ext string) bool {
	if len(ext) < 2 || len(ext) > 17 || ext[0] != '.' {
		return false
	}
	for i := 1; i < len(ext); i++ {
		if ext[i] < 'a' || ext[i] > 'z' {
			return false
		}
	}
	return ext != ".generations"
}

// Load returns the record called name as the kind's Decode made it, nil
// if there is none (or it is damaged: a warning is logged once). It reads
// lock-free through the shared mapping, and for a record unchanged since
// the last Load it makes no system call, takes no lock, writes nothing and
// allocates nothing.
func (k *Kind) Load(name string) (any, error) {
	f := k.f
	s, err := f.slot(k, name)
	if err != nil {
		return nil, err
	}
	s.touch()
	if v := s.view.Load(); v != nil && f.fresh(s, v) {
		return v.val, nil
	}
	return f.loadSlow(s)
}

func (f *File) loadSlow(s *slot) (any, error) {
	s, err := f.lockSlot(s)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	m, g, err := f.current(s)
	if err != nil {
		return nil, err
	}
	if m == nil {
		s.view.Store(&view{dirGen: g})
		return nil, nil
	}
	var p payload
	st, seq, gen := readWords(m.w, &p)
	switch st {
	case readOK:
		if val, ok := decodeWith(s.kind.decode, &p); ok {
			s.view.Store(&view{m: m, dirGen: g, seq: seq, gen: gen, val: val})
			return val, nil
		}
		f.warnDamaged(s, "not a record of its kind")
	case readGarbage:
		f.warnDamaged(s, "garbage")
	case readFault:
		f.warnDamaged(s, "cut short")
		return nil, f.updateHeld(s, func(*payload, readStatus) (action, error) { return leave, nil })
	case readBusy:
		return f.loadLocked(s)
	}
	return nil, nil
}

// loadLocked reads s's record under the file lock, when lock-free reads
// kept finding a write in progress. A write left unfinished by a dead
// writer is repaired: the kind's blank record is written. The caller holds
// s.mu.
func (f *File) loadLocked(s *slot) (any, error) {
	var val any
	err := f.updateHeld(s, func(p *payload, st readStatus) (action, error) {
		ok := false
		if st == readOK {
			val, ok = decodeWith(s.kind.decode, p)
		}
		if ok || st == readEmpty {
			return leave, nil
		}
		val = nil
		f.warnDamaged(s, st.String())
		*p = s.kind.blank
		return write, nil
	})
	return val, err
}

// Transform atomically replaces the record called name by fn(old), under
// the file's lock: old is nil when the record is new or was damaged (or,
// for a kind with a Decode, when Decode rejects it). A record transformed
// to nothing (nil or empty) is removed, its file with it; one transformed
// to its own bytes is not written. If fn returns an error, the record is
// left as it was and Transform returns that error. A record holds at most
// MaxRecord bytes. fn may be called twice when the record has no file yet
// (once to see whether it needs one, once under the new file's lock): only
// the last call's result is kept. Never call anything slow from fn.
func (k *Kind) Transform(name string, fn func(old []byte) ([]byte, error)) error {
	f := k.f
	s, err := f.slot(k, name)
	if err != nil {
		return err
	}
	s.touch()
	return f.update(s, func(p *payload, st readStatus) (action, error) {
		var old []byte
		switch st {
		case readOK:
			old = p.bytes()
			if k.check && !f.decoded(s) {
				if _, ok := decodeWith(k.decode, p); !ok {
					f.warnDamaged(s, "not a record of its kind")
					old = nil
				}
			}
		case readEmpty:
		default:
			f.warnDamaged(s, st.String())
		}
		b, err := fn(old)
		if err != nil {
			return leave, err
		}
		if len(b) > payloadMax {
			return leave, fmt.Errorf("state: record %q would be %d bytes, more than the %d a state file holds", name, len(b), payloadMax)
		}
		if len(b) == 0 {
			return remove, nil
		}
		if old != nil && p.holds(b) {
			return leave, nil
		}
		p.setBytes(b)
		return write, nil
	})
}

// Update atomically replaces the record called name by fn(old), under the
// file's lock, for a kind with an Encode and a Decode: old is the record
// decoded, as Load returns it (nil when there is none, or it is damaged),
// and fn returns the new value, which Update encodes, writes, and keeps
// for Load to return until the record changes. A record transformed to
// nil is removed, its file with it; one transformed to its own encoding
// is not written. If fn returns an error, the record is left as it was
// and Update returns that error. A record this process has loaded or
// updated, and nobody changed since, is not decoded again. fn may be
// called twice, as Transform's. Never call anything slow from fn.
func (k *Kind) Update(name string, fn func(old any) (any, error)) error {
	if k.encode == nil || k.check == false {
		return fmt.Errorf("state: Update of %q: kind %s has no Encode and Decode", name, k.ext)
	}
	f := k.f
	s, err := f.slot(k, name)
	if err != nil {
		return err
	}
	s.touch()
	return f.update(s, func(p *payload, st readStatus) (action, error) {
		s.pending = nil
		var old any
		switch st {
		case readOK:
			if f.decoded(s) {
				old = s.view.Load().val
				break
			}
			var ok bool
			if old, ok = decodeWith(k.decode, p); !ok {
				f.warnDamaged(s, "not a record of its kind")
				old = nil
			}
		case readEmpty:
		default:
			f.warnDamaged(s, st.String())
		}
		v, err := fn(old)
		if err != nil {
			return leave, err
		}
		if v == nil {
			return remove, nil
		}
		buf := scratch.Get().(*[payloadMax]byte)
		defer scratch.Put(buf)
		b := k.encode(buf[:0], v)
		if len(b) > payloadMax || len(b) == 0 {
			return leave, fmt.Errorf("state: record %q encodes to %d bytes: a record holds 1 to %d", name, len(b), payloadMax)
		}
		if old != nil && p.holds(b) {
			return leave, nil
		}
		p.setBytes(b)
		s.pending = &view{val: v}
		return write, nil
	})
}

// decoded reports whether s's record, as the caller holding its file lock
// reads it, is the one its view holds decoded: a record this process
// loaded and nobody changed since needs no decoding to be known sound.
func (f *File) decoded(s *slot) bool {
	v := s.view.Load()
	return v != nil && v.m != nil && v.m == s.m && f.fresh(s, v)
}

// Snapshot returns the bytes of the record called name as Transform last
// wrote them; nil if there is none. It reads without the file lock.
func (k *Kind) Snapshot(name string) ([]byte, error) {
	f := k.f
	s, err := f.slot(k, name)
	if err != nil {
		return nil, err
	}
	s, err = f.lockSlot(s)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	m, _, err := f.current(s)
	if err != nil || m == nil {
		return nil, err
	}
	var p payload
	st, _, _ := readWords(m.w, &p)
	switch st {
	case readOK:
		return p.bytes(), nil
	case readEmpty:
		return nil, nil
	case readBusy:
		var b []byte
		err := f.updateHeld(s, func(p *payload, st readStatus) (action, error) {
			if st == readOK {
				b = p.bytes()
			}
			return leave, nil
		})
		return b, err
	}
	f.warnDamaged(s, st.String())
	return nil, nil
}
