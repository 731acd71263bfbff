package untrusted

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
)

// WriteFile replaces the file at rel with data, mode perm: a new file beside it (O_EXCL, so never one that is
// there) is written, synced and renamed over rel, in a parent opened beneath the tree. What was at rel — a
// symlink, a hard link to another file — is replaced, never written through. The parent must exist (MkdirAll).
func (t Tree) WriteFile(rel string, data []byte, perm fs.FileMode) (err error) {
	root, err := t.open()
	if err != nil {
		return err
	}
	defer root.Close()
	p := t.path(rel)
	dir, name := path.Split(p)
	parent := root
	if dir != "" {
		if parent, err = root.OpenRoot(strings.TrimSuffix(dir, "/")); err != nil {
			return explain(root, p, err)
		}
		defer parent.Close()
	}
	tmp := "." + name + ".tmp-" + randomSuffix()
	f, err := parent.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = parent.Remove(tmp)
		}
	}()
	_, werr := f.Write(data)
	serr := f.Sync()
	merr := f.Chmod(perm) // fchmod: the descriptor's file, whatever the name holds now
	cerr := f.Close()
	if err := errors.Join(werr, serr, merr, cerr); err != nil {
		return err
	}
	if err := parent.Rename(tmp, name); err != nil {
		if fi, lerr := parent.Lstat(name); lerr == nil && fi.IsDir() {
			return refuse(p, "a directory")
		}
		return explain(root, p, err)
	}
	return nil
}

// MkdirAll makes the directory rel and its missing parents, mode perm, beneath the tree.
func (t Tree) MkdirAll(rel string, perm fs.FileMode) error {
	root, err := t.open()
	if err != nil {
		return err
	}
	defer root.Close()
	p := t.path(rel)
	if err := root.MkdirAll(p, perm); err != nil {
		return explain(root, p, err)
	}
	return nil
}

// Remove removes the name rel (a link itself, never its target); one that is not there is fs.ErrNotExist.
func (t Tree) Remove(rel string) error {
	root, err := t.open()
	if err != nil {
		return err
	}
	defer root.Close()
	p := t.path(rel)
	if err := root.Remove(p); err != nil {
		return explain(root, p, err)
	}
	return nil
}

// Exists reports whether anything is at rel: a file ace would refuse (a FIFO, a link out of the tree) counts.
// It opens nothing.
func (t Tree) Exists(rel string) bool {
	root, err := t.open()
	if err != nil {
		return false
	}
	defer root.Close()
	_, err = root.Lstat(t.path(rel))
	return err == nil || !errors.Is(err, fs.ErrNotExist)
}

// Lstat is what is at rel, a link itself rather than its target.
func (t Tree) Lstat(rel string) (fs.FileInfo, error) {
	root, err := t.open()
	if err != nil {
		return nil, err
	}
	defer root.Close()
	p := t.path(rel)
	fi, err := root.Lstat(p)
	if err != nil {
		return nil, explain(root, p, err)
	}
	return fi, nil
}

// Readlink is the target of the symlink at rel.
func (t Tree) Readlink(rel string) (string, error) {
	root, err := t.open()
	if err != nil {
		return "", err
	}
	defer root.Close()
	p := t.path(rel)
	s, err := root.Readlink(p)
	if err != nil {
		return "", explain(root, p, err)
	}
	return s, nil
}

// Symlink makes rel a symlink to target (ace's choice of target: a file of the user's an agent's home links).
func (t Tree) Symlink(target, rel string) error {
	root, err := t.open()
	if err != nil {
		return err
	}
	defer root.Close()
	p := t.path(rel)
	if err := root.Symlink(target, p); err != nil {
		return explain(root, p, err)
	}
	return nil
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
