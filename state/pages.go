package state

import (
	"fmt"
	"time"
)

// The pages of a File's region: each holds one open state file, mapped,
// and a file is closed (the least recently used first) when a page is
// wanted and none is free.

// pageWait bounds how long opening a file waits for a page while every
// page is held by a file being changed.
const pageWait = 10 * time.Second

// attach maps the open state file fd into a page for s. The caller holds
// s.mu and s has no file.
func (f *File) attach(s *slot, fd int) (*mapping, error) {
	page, err := f.acquirePage(s)
	if err != nil {
		closeFD(fd)
		return nil, err
	}
	m := &mapping{fd: fd, page: page}
	m.w, err = f.region.mapFile(page, fd)
	var grew bool
	if err == nil {
		grew, err = m.ensureSize()
	}
	if err != nil {
		f.mu.Lock()
		f.region.blank(page)
		f.pages[page] = nil
		f.mu.Unlock()
		closeFD(fd)
		return nil, fmt.Errorf("state: open state file %s: %w", s.path, err)
	}
	if grew {
		f.warnDamaged(s, "cut short")
	}
	s.m = m
	return m, nil
}

// acquirePage returns a free page of the region, reserved for s, closing
// the file least recently used if every page is taken.
func (f *File) acquirePage(s *slot) (int, error) {
	deadline := time.Now().Add(pageWait)
	for {
		f.mu.Lock()
		if f.closed.Load() {
			f.mu.Unlock()
			return 0, ErrClosed
		}
		if i, ok := f.freePage(); ok {
			f.pages[i] = s
			f.mu.Unlock()
			return i, nil
		}
		f.mu.Unlock()
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("state: all %d state files this process may hold open stayed busy for %v: raise MaxOpen", len(f.pages), pageWait)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// freePage finds a free page, closing a file to free one: the clock
// algorithm, where a file used since the hand last passed is spared once.
// A file being read or changed (its slot locked) is skipped. The caller
// holds f.mu.
func (f *File) freePage() (int, bool) {
	n := len(f.pages)
	for range 2 * n {
		i := f.hand
		f.hand = (f.hand + 1) % n
		v := f.pages[i]
		if v == nil {
			return i, true
		}
		if v.used.Load() {
			v.used.Store(false)
			continue
		}
		if !v.mu.TryLock() {
			continue
		}
		f.detachLocked(v, false) // the page is mapped over at once
		v.mu.Unlock()
		return i, true
	}
	return 0, false
}

// detach closes s's file and frees its page. The caller holds s.mu.
func (f *File) detach(s *slot, blank bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.detachLocked(s, blank)
}

// detachLocked closes s's file: its view is cleared first, so that a
// reader racing the close finds it stale; the page is mapped to anonymous
// memory if blank is set. The caller holds f.mu and s.mu.
func (f *File) detachLocked(s *slot, blank bool) {
	m := s.m
	if m == nil {
		return
	}
	s.view.Store(nil)
	s.drain()
	if blank {
		f.region.blank(m.page)
	}
	m.closeFile()
	f.pages[m.page] = nil
	s.m, s.checked = nil, false
}

// reopen maps the file now at s's path over s's page, in place of the one
// removed or replaced there, and closes the old one. The caller holds s.mu.
func (f *File) reopen(s *slot) error {
	fd, _, created, err := openState(s.path, &s.kind.blank, true)
	if err != nil {
		return err
	}
	if created {
		f.gens.bump(s.gi)
	}
	old := s.m
	s.view.Store(nil)
	s.drain()
	nm := &mapping{fd: fd, page: old.page}
	nm.w, err = f.region.mapFile(old.page, fd)
	if err == nil {
		_, err = nm.ensureSize()
	}
	if err != nil {
		closeFD(fd)
		f.detach(s, true)
		return err
	}
	old.closeFile()
	s.m, s.checked = nm, false
	return nil
}

// create creates s's state file (if no other process just did) and opens
// it. The caller holds s.mu and s has no file.
func (f *File) create(s *slot) (*mapping, error) {
	fd, _, created, err := openState(s.path, &s.kind.blank, true)
	if err != nil {
		return nil, err
	}
	if created {
		f.gens.bump(s.gi)
	}
	s.checked = false
	return f.attach(s, fd)
}
