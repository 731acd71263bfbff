// Package untrusted is the one way ace reads and writes files an agent controls: its working copy (.git
// included), its home for a boxed run, a live host's directory — every tree a box mounts read-write. ace works on
// them on the host, as the user, outside the box: a file there is hostile input, whatever its name.
//
// A Tree is such a directory. Its own path is ace's (a working copy or home ace made; in a box it is a mount
// point, which the agent cannot replace); everything beneath it is the agent's. So:
//
//   - A path is resolved beneath the tree and never out of it (os.Root: each component opened with O_NOFOLLOW
//     from the one before, no "..", no absolute link). A symlink that stays in the tree is followed: everything
//     there is the agent's to read and write already, so following it gives the agent nothing, and repositories
//     link files (CLAUDE.md → AGENTS.md). One that leads out is refused, and the refusal says where it led.
//   - A read opens a regular file or nothing: opened O_NONBLOCK|O_NOCTTY (a FIFO opens at once, a device never
//     becomes ace's terminal), then fstat'ed — a FIFO, a socket, a device or a directory is refused, as is a
//     file with more than one name (a hard link: in a box the agent can only link what it can already read, but
//     an unboxed agent could link a file ace must not read). It is read from the descriptor fstat'ed, so a
//     swap of the path after the check changes nothing, and at most the use's cap: a file over it is refused
//     before a byte is read, one that grows past it while read is refused then.
//   - A write never goes through what is there: a new file (O_EXCL) is written beside the name, synced and
//     renamed over it, so a symlink or hard link at the name is replaced, never followed. Parents are made or
//     opened beneath the tree (a link out of it is refused).
//
// Every refusal is a *Refusal that says what was found; callers record it (workflow: a file-refused event and
// a row of the status comment) and go on without the file's content. A file that is not there is
// fs.ErrNotExist, as with package os.
package untrusted

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/aceworks/ace/pkg/sanitize"
)

// Tree is a directory an agent controls, and a base path beneath it where relative paths start.
type Tree struct {
	root string // the directory ace made: nothing above it is the agent's
	base string // slash-separated, beneath root; "" for root itself
}

// New is the tree at dir, a directory ace made (the agent can write beneath it, not replace it).
func New(dir string) Tree { return Tree{root: dir} }

// Sub is the tree's directory at rel, still bounded by the tree's root: a sub directory the agent replaced with
// a link out of the tree is refused as any other path is.
func (t Tree) Sub(rel string) Tree { return Tree{root: t.root, base: t.path(rel)} }

// Dir is where the tree's base is on disk, for messages and for programs that take paths (git).
func (t Tree) Dir() string { return filepath.Join(t.root, filepath.FromSlash(t.base)) }

// Path is rel as a path on disk. Only for what does not open the file (messages, a program's argument).
func (t Tree) Path(rel string) string { return filepath.Join(t.root, filepath.FromSlash(t.path(rel))) }

// path is rel beneath the base, relative to the root.
func (t Tree) path(rel string) string {
	rel = filepath.ToSlash(rel)
	if t.base == "" {
		return path.Clean(rel)
	}
	return path.Join(t.base, rel)
}

// open opens the tree's root. A root that is gone is fs.ErrNotExist.
func (t Tree) open() (*os.Root, error) {
	if t.root == "" {
		return nil, errors.New("untrusted: a tree without a directory")
	}
	return os.OpenRoot(t.root)
}

// Refusal is a file ace would not read or write: what it found at Path instead of what it may use.
type Refusal struct {
	Path  string // relative to the tree's root, as ace named it
	Found string // "a FIFO", ".ace is a symlink out of the tree (to /home/u/.ssh)", "3.0 GiB, over the 64 KiB cap"
}

func (r *Refusal) Error() string { return "refused " + r.Path + ": " + r.Found }

// IsRefusal reports whether err is (or wraps) a Refusal, and returns it.
func IsRefusal(err error) (*Refusal, bool) {
	var r *Refusal
	ok := errors.As(err, &r)
	return r, ok
}

// refuse makes the Refusal of p.
func refuse(p, format string, args ...any) *Refusal {
	return &Refusal{Path: p, Found: fmt.Sprintf(format, args...)}
}

// explain turns an error of os.Root about p into a Refusal where the agent is the cause — a link out of the
// tree, a loop of links, a file where a directory is needed — and leaves any other error (missing, permission,
// I/O) as it is.
func explain(root *os.Root, p string, err error) error {
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parts := strings.Split(p, "/")
	for i := range parts {
		prefix := strings.Join(parts[:i+1], "/")
		fi, lerr := root.Lstat(prefix)
		if lerr != nil {
			break
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			if _, serr := root.Stat(prefix); serr != nil && !errors.Is(serr, fs.ErrNotExist) && !errors.Is(serr, syscall.ELOOP) {
				target, _ := root.Readlink(prefix)
				what := "a symlink out of the tree (to " + quoted(target) + ")"
				if prefix != p {
					what = prefix + " is " + what
				}
				return &Refusal{Path: p, Found: what}
			}
			continue
		}
		if !fi.IsDir() && i < len(parts)-1 {
			return refuse(p, "%s is %s, not a directory", prefix, Kind(fi.Mode()))
		}
	}
	if errors.Is(err, syscall.ELOOP) {
		return refuse(p, "a loop of symlinks")
	}
	return err
}

// quoted is a link's target for a message: one clean line, bounded (the agent chose it).
func quoted(target string) string {
	if target == "" {
		return "?"
	}
	return sanitize.Line(target)
}

// Kind names a file's type for a refusal ("a FIFO"): here and wherever ace refuses what an agent left.
func Kind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeSymlink != 0:
		return "a symlink"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	}
	return "a special file"
}

// Size formats n bytes as people read a cap: 512 B, 64 KiB, 1.5 MiB.
func Size(n int64) string { return size(n, false) }

// measured formats a size found, with its fraction: 3.0 GiB.
func measured(n int64) string { return size(n, true) }

func size(n int64, fraction bool) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	v := float64(n) / float64(div)
	if n%div == 0 && !fraction {
		return fmt.Sprintf("%.0f %ciB", v, "KMGTPE"[exp])
	}
	return fmt.Sprintf("%.1f %ciB", v, "KMGTPE"[exp])
}
