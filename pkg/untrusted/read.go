package untrusted

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// File is a regular file of a tree open for reading, at most its cap.
type File struct {
	f     *os.File
	path  string
	limit int64
	left  int64 // bytes that may still be read: limit+1 at first, so that growing past the cap shows
	size  int64
}

// Open opens the regular file at rel for reading at most limit bytes (see the package's rules). A file that is
// not there is fs.ErrNotExist; anything else than a regular file of one name and at most limit bytes is a
// *Refusal.
func (t Tree) Open(rel string, limit int64) (*File, error) {
	root, err := t.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	p := t.path(rel)
	f, err := root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		err = explain(root, p, err)
		if _, ok := IsRefusal(err); !ok && !errors.Is(err, fs.ErrNotExist) {
			if fi, serr := root.Stat(p); serr == nil && !fi.Mode().IsRegular() {
				err = refuse(p, "%s", Kind(fi.Mode())) // a socket does not open (ENXIO)
			}
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	var r *Refusal
	switch st, _ := fi.Sys().(*syscall.Stat_t); {
	case !fi.Mode().IsRegular():
		r = refuse(p, "%s", Kind(fi.Mode()))
	case st != nil && st.Nlink > 1:
		r = refuse(p, "a hard link (a file of more than one name: its others may be out of the tree)")
	case fi.Size() > limit:
		r = refuse(p, "%s, over the %s cap", measured(fi.Size()), Size(limit))
	}
	if r != nil {
		f.Close()
		return nil, r
	}
	return &File{f: f, path: p, limit: limit, left: limit + 1, size: fi.Size()}, nil
}

// Size is the file's size when it was opened.
func (f *File) Size() int64 { return f.size }

// Read reads the file; past its cap (the file grew while read) it fails with a *Refusal.
func (f *File) Read(b []byte) (int, error) {
	if int64(len(b)) > f.left {
		b = b[:f.left]
	}
	n, err := f.f.Read(b)
	f.left -= int64(n)
	if f.left <= 0 {
		return n, refuse(f.path, "grew past the %s cap while ace read it", Size(f.limit))
	}
	return n, err
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// ReadFile reads the regular file at rel whole, if it is at most limit bytes (see Open).
func (t Tree) ReadFile(rel string, limit int64) ([]byte, error) {
	f, err := t.Open(rel, limit)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, f.Size()+1) // +1: the read that finds the end
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := f.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// Lines calls fn with each line of the file, its newline included (the last may lack one); fn must not keep
// line. A line longer than maxLine is skipped whole — never held — and fn never sees it: a line an agent wrote
// without end cannot grow ace.
func (f *File) Lines(maxLine int, fn func(line []byte) error) error {
	r := bufio.NewReaderSize(f, 64<<10)
	var line []byte
	over := false // the line so far is longer than maxLine: skipped to its end
	for {
		chunk, err := r.ReadSlice('\n')
		if !over && len(line)+len(chunk) > maxLine {
			over, line = true, line[:0]
		} else if !over {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // the line goes on
		}
		if !over && len(line) > 0 {
			if ferr := fn(line); ferr != nil {
				return ferr
			}
		}
		line, over = line[:0], false
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
