package untrusted

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"syscall"
)

// Bounds of a walk: a CLI's session folders are a few levels deep and hold hundreds of files, not millions.
const (
	MaxDepth   = 8
	MaxEntries = 20000
)

// ReadDir lists the directory at rel beneath the tree, sorted by name, at most MaxEntries entries (more is a
// *Refusal). The directory is opened O_DIRECTORY|O_NONBLOCK: a FIFO swapped in for it is refused, not waited on.
func (t Tree) ReadDir(rel string) ([]fs.DirEntry, error) {
	root, err := t.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return readDir(root, t.path(rel), MaxEntries)
}

func readDir(root *os.Root, p string, max int) ([]fs.DirEntry, error) {
	d, err := root.OpenFile(p, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ENOTDIR) {
			if fi, lerr := root.Lstat(p); lerr == nil {
				return nil, refuse(p, "%s, not a directory", Kind(fi.Mode()))
			}
		}
		return nil, explain(root, p, err)
	}
	defer d.Close()
	var out []fs.DirEntry
	for {
		batch, err := d.ReadDir(256)
		out = append(out, batch...)
		if len(out) > max {
			return nil, refuse(p, "a directory of more than %d entries", max)
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int {
		if a.Name() < b.Name() {
			return -1
		}
		if a.Name() > b.Name() {
			return 1
		}
		return 0
	})
	return out, nil
}

// Walk calls fn for each entry beneath the directory rel, depth first in name order, with the entry's path
// relative to the tree's base and its own type: a symlink is passed to fn as one (never walked into; Open
// decides whether a link to a file may be read), a directory is passed before its entries, and fn's
// fs.SkipDir skips it. A directory rel that is not there walks nothing. At most MaxDepth levels and MaxEntries
// entries in all: more is a *Refusal.
func (t Tree) Walk(rel string, fn func(rel string, d fs.DirEntry) error) error {
	root, err := t.open()
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	defer root.Close()
	left := MaxEntries
	var walk func(dir string, depth int) error
	walk = func(dir string, depth int) error {
		if depth > MaxDepth {
			return refuse(t.path(dir), "more than %d levels of directories", MaxDepth)
		}
		entries, err := readDir(root, t.path(dir), left)
		if err != nil {
			return err
		}
		left -= len(entries)
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			err := fn(p, e)
			if e.IsDir() {
				if errors.Is(err, fs.SkipDir) {
					continue
				}
				if err == nil {
					err = walk(p, depth+1)
				}
			}
			if errors.Is(err, fs.ErrNotExist) {
				continue // gone since it was listed
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	err = walk(path.Clean(rel), 1)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}
