// Package atomicfile replaces files whole: a reader, or a crash, sees the old content or the new, never half of
// either. State, status and issue files all go through it.
package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
)

// Write replaces path with data: a temporary file in the same directory (so the rename stays on one file
// system) is written, synced, given perm and renamed over path. On failure path is untouched and no temporary
// file is left behind.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	_, werr := tmp.Write(data)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), perm); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
