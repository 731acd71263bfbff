package runbox

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/untrusted"
)

// systemPrefixes are what every box shows already (package sandbox): nothing below them needs a mount.
var systemPrefixes = []string{"/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/etc/"}

// maxLinkHops bounds the links followed from a program to its file.
const maxLinkHops = 8

// install is what a box must show for a program to run, and no more: its package's install root when it has
// one (the outermost node_modules above its file, a Python virtual environment), else the file itself — never
// the directory a program or a link to it sits in (a command at ~/work/agent.sh shows that file, not ~/work) —
// and the links PATH finds it through, made in the box as links to the file. The system's are left out.
type install struct {
	paths []string // shown read-only: install roots (directories) and program files
	links []sandbox.Link
}

// installOf is what program needs in a box: as PATH finds it (a path relative to workdir as it is), through its
// links, and for a script its interpreter's (node, found on path) too. A program in the working copy is in the
// box already: it adds nothing, and its #! line (the agent's to write) adds only an interpreter found on path by
// name.
func installOf(program, workdir, path string) install {
	var in install
	seen := map[string]bool{}
	var visit func(program string, depth int, fromAgent bool)
	visit = func(program string, depth int, fromAgent bool) {
		found := lookPath(program, workdir, path)
		if found == "" || depth > 2 || seen[found] || (fromAgent && strings.Contains(program, "/")) {
			return
		}
		seen[found] = true
		if within(found, workdir) {
			if interp := interpreter(found, workdir); interp != "" {
				visit(interp, depth+1, true)
			}
			return
		}
		file, links := resolveLinks(found)
		root := installRoot(file)
		if root != "" {
			in.add(root)
		} else {
			in.add(file)
		}
		for _, l := range links {
			if !system(l.Path) && (root == "" || !within(l.Path, root)) {
				in.links = append(in.links, l)
			}
		}
		if interp := interpreter(file, ""); interp != "" {
			visit(interp, depth+1, fromAgent)
		}
	}
	visit(program, 0, false)
	return in
}

func (in *install) add(p string) {
	if !system(p) && p != "/" && !slices.Contains(in.paths, p) {
		in.paths = append(in.paths, p)
	}
}

// resolveLinks follows found's links to the file they lead to, each link becoming one to that file's absolute
// path (so that it leads there wherever the box has it, whatever links were in the directories above it).
func resolveLinks(found string) (string, []sandbox.Link) {
	var hops []string
	p := found
	for range maxLinkHops {
		fi, err := os.Lstat(p)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			break
		}
		target, err := os.Readlink(p)
		if err != nil {
			break
		}
		hops = append(hops, p)
		if !filepath.IsAbs(target) {
			dir, err := filepath.EvalSymlinks(filepath.Dir(p))
			if err != nil {
				break
			}
			target = filepath.Join(dir, target)
		}
		p = filepath.Clean(target)
	}
	file, err := filepath.EvalSymlinks(p)
	if err != nil {
		file = p
	}
	links := make([]sandbox.Link, len(hops))
	for i, h := range hops {
		links[i] = sandbox.Link{Path: h, Target: file}
	}
	return file, links
}

// lookPath finds program as the box will: a path as it is (relative to workdir), a bare name on path.
func lookPath(program, workdir, path string) string {
	if strings.Contains(program, "/") {
		if !filepath.IsAbs(program) {
			program = filepath.Join(workdir, program)
		}
		if _, err := os.Lstat(program); err != nil {
			return ""
		}
		return program
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // "." or "": the box's working directory is not ace's
		}
		p := filepath.Join(dir, program)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// installRoot is the install root of the program file real: the outermost node_modules above it (a package
// loads its dependencies from there), or the Python virtual environment it is in (its pyvenv.cfg's directory);
// "" for a program of no package.
func installRoot(real string) string {
	if i := strings.Index(real, "/node_modules/"); i >= 0 {
		return real[:i+len("/node_modules")]
	}
	for d := filepath.Dir(real); d != "/" && d != "."; d = filepath.Dir(d) {
		if fi, err := os.Stat(filepath.Join(d, "pyvenv.cfg")); err == nil && fi.Mode().IsRegular() {
			return d
		}
	}
	return ""
}

// interpreter is the program a script's #! line runs (for "#!/usr/bin/env node", node), "" for a binary. A file
// of the working copy workdir (the agent's) is read beneath it; any file is read only when it is a regular file
// (opened without waiting: a FIFO at the program's path must not hold ace).
func interpreter(file, workdir string) string {
	head := make([]byte, 256)
	n := 0
	if workdir != "" {
		rel, err := filepath.Rel(workdir, file)
		if err != nil {
			return ""
		}
		f, err := untrusted.New(workdir).Open(rel, 1<<40) // only the first line is read
		if err != nil {
			return ""
		}
		n, _ = f.Read(head)
		f.Close()
	} else {
		f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return ""
		}
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			n, _ = f.Read(head)
		}
		f.Close()
	}
	line, _, _ := bytes.Cut(head[:n], []byte("\n"))
	rest, ok := bytes.CutPrefix(line, []byte("#!"))
	if !ok {
		return ""
	}
	fields := strings.Fields(string(rest))
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" {
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				return f
			}
		}
		return ""
	}
	return fields[0]
}

func system(p string) bool {
	for _, s := range systemPrefixes {
		if strings.HasPrefix(p+"/", s) {
			return true
		}
	}
	return false
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return dir != "" && (path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/"))
}
