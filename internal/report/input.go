package report

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// Input is one source of attempt lines and what was read from it.
type Input struct {
	// Name is the path as given, or "-" for standard input.
	Name string `json:"name"`
	// Lines is the number of attempt lines decoded.
	Lines int `json:"lines"`
	// Malformed is the number of lines skipped as malformed.
	Malformed int `json:"malformed"`
	// Truncated is true for a gzip stream that ended early; the lines
	// before the cut are used.
	Truncated bool `json:"truncated,omitempty"`
}

// readInput reads the named input ("-" is stdin), gzip or plain, and calls
// fn with each line. Its error is one line naming the input and the fix.
func readInput(name string, stdin io.Reader, fn func(Line)) (Input, error) {
	in := Input{Name: name}
	r := stdin
	if name != "-" {
		f, err := os.Open(name)
		if errors.Is(err, fs.ErrNotExist) {
			return in, fmt.Errorf("%s: no such file; give the path of an attempt log, or - for stdin", name)
		}
		if err != nil {
			return in, fmt.Errorf("%s: %v", name, errors.Unwrap(err))
		}
		defer f.Close()
		r = f
	}
	r, closeFn, err := decompress(r)
	if err != nil {
		return in, fmt.Errorf("%s: looks like gzip but cannot be read (%v); check the file", name, err)
	}
	defer closeFn()
	in.Malformed, err = Read(r, func(l Line) {
		in.Lines++
		fn(l)
	})
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		in.Truncated = true
	case err != nil:
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return in, fmt.Errorf("%s: read failed: %v", name, err)
	}
	return in, nil
}

// decompress returns a reader of r's content, gunzipped when r starts with
// the gzip magic bytes, so rotated .gz logs and piped gzip read alike.
func decompress(r io.Reader) (io.Reader, func() error, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(2)
	if len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return br, func() error { return nil }, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, nil, err
	}
	return zr, zr.Close, nil
}
