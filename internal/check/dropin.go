package check

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// unitFiles is one unit to check: its main file and its drop-ins, in the
// order systemd applies them.
type unitFiles struct {
	Path    string
	DropIns []string
}

// kind is "service" or "timer".
func (u unitFiles) kind() string {
	return strings.TrimPrefix(filepath.Ext(u.Path), ".")
}

// isUnit reports whether name is a unit file this tool reads.
func isUnit(name string) bool {
	return strings.HasSuffix(name, ".service") || strings.HasSuffix(name, ".timer")
}

// collect lists the units the paths name: a .service or .timer file, or a
// directory whose .service and .timer files are all taken, in its
// subdirectories too (see mainFiles). Masked units (links to /dev/null)
// are left out, and a unit named twice (by two paths, or by a link and
// its target) is taken once. Each unit's drop-ins are looked up next to
// its main file. A path that does not exist, cannot be read, or is neither
// a unit nor a directory is an error.
func collect(paths []string) ([]unitFiles, error) {
	var out []unitFiles
	seen := map[string]bool{}
	for _, p := range paths {
		mains, err := mainFiles(p)
		if err != nil {
			return nil, err
		}
		for _, m := range mains {
			id := m
			if t, err := filepath.EvalSymlinks(m); err == nil {
				id = t
			}
			if seen[id] || masked(m) {
				continue
			}
			seen[id] = true
			d, err := dropIns(filepath.Dir(m), filepath.Base(m))
			if err != nil {
				return nil, err
			}
			out = append(out, unitFiles{Path: m, DropIns: d})
		}
	}
	return out, nil
}

// mainFiles returns the unit files path names, cleaned: path itself, or
// for a directory every .service and .timer file below it, in lexical
// order, subdirectories included (deploy/systemd/ names the gateway's unit
// and the examples/ beside it). Left out: drop-in directories (foo.d,
// read with their unit), the .wants, .requires and .upholds directories
// of enabled units (links to units installed elsewhere, which the caller
// did not name), hidden directories, and links to directories.
func mainFiles(p string) ([]string, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, pathError(p, err)
	}
	if !st.IsDir() {
		if !isUnit(p) {
			return nil, fmt.Errorf("%s: not a .service or .timer file, nor a directory of them", p)
		}
		return []string{filepath.Clean(p)}, nil
	}
	var out []string
	err = filepath.WalkDir(p, func(full string, e fs.DirEntry, err error) error {
		if err != nil {
			return pathError(full, err)
		}
		if e.IsDir() {
			if full != p && skipDir(e.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !isUnit(e.Name()) {
			return nil
		}
		if st, err := os.Stat(full); err == nil && st.IsDir() {
			return nil
		}
		out = append(out, full)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no .service or .timer files in it or below it", p)
	}
	return out, nil
}

// skipDir reports whether mainFiles leaves out the directory name.
func skipDir(name string) bool {
	for _, suffix := range []string{".d", ".wants", ".requires", ".upholds"} {
		if strings.HasSuffix(name, suffix) {
			return true
		}
	}
	return strings.HasPrefix(name, ".")
}

// pathError says in one line why p cannot be used.
func pathError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: no such file or directory", p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", p)
	}
	return err
}

// masked reports whether the unit file p is a link to /dev/null.
func masked(p string) bool {
	t, err := filepath.EvalSymlinks(p)
	return err == nil && t == os.DevNull
}

// dropInDirs returns the drop-in directories of unit name in dir, the one
// that wins a clash of file names first: name.d, the template's
// (foo@.service.d for foo@bar.service), the dash prefixes'
// (foo-bar-.service.d, foo-.service.d for foo-bar-baz.service), and the
// type's (service.d).
func dropInDirs(dir, name string) []string {
	ext := filepath.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	dirs := []string{name + ".d"}
	if at := strings.IndexByte(stem, '@'); at >= 0 && at < len(stem)-1 {
		stem = stem[:at+1]
		dirs = append(dirs, stem+ext+".d")
	}
	for p := strings.TrimSuffix(stem, "-"); ; {
		i := strings.LastIndexByte(p, '-')
		if i <= 0 {
			break
		}
		p = p[:i]
		dirs = append(dirs, p+"-"+ext+".d")
	}
	dirs = append(dirs, strings.TrimPrefix(ext, ".")+".d")
	for i, d := range dirs {
		dirs[i] = filepath.Join(dir, d)
	}
	return dirs
}

// dropIns returns the drop-in files of unit name in dir in the order
// systemd applies them: every *.conf of its drop-in directories, sorted by
// file name, a name in an earlier directory (see dropInDirs) hiding the
// same name in a later one.
func dropIns(dir, name string) ([]string, error) {
	byName := map[string]string{}
	for _, d := range dropInDirs(dir, name) {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			continue
		}
		ents, err := os.ReadDir(d)
		if err != nil {
			return nil, pathError(d, err)
		}
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".conf") || byName[e.Name()] != "" {
				continue
			}
			if st, err := os.Stat(filepath.Join(d, e.Name())); err == nil && st.IsDir() {
				continue
			}
			byName[e.Name()] = filepath.Join(d, e.Name())
		}
	}
	names := slices.Sorted(maps.Keys(byName))
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = byName[n]
	}
	return out, nil
}
