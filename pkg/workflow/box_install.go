package workflow

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// systemPrefixes are what every box shows already (package sandbox): nothing below them needs a mount.
var systemPrefixes = []string{"/usr/", "/bin/", "/sbin/", "/lib/", "/lib32/", "/lib64/", "/libx32/", "/etc/"}

// installDirs are the host directories a box must show for program to run: its install directory as PATH finds
// it — the top node_modules of an npm install, with the packages it loads (codex's native binary is one), else the
// directory it is in (a bin directory of links, say) — and again as its links resolve, since a relative link
// resolves inside the box where it sits; and, for a script, its interpreter's (node, found on path). Each is
// mounted at the path given, symlinked directories on the way included. The system's are left out.
func installDirs(program, workdir, path string) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(program string, depth int)
	visit = func(program string, depth int) {
		found := lookPath(program, workdir, path)
		if found == "" || depth > 2 || seen[found] {
			return
		}
		seen[found] = true
		real, err := filepath.EvalSymlinks(found)
		if err != nil {
			return
		}
		for _, d := range []string{installDir(found), installDir(real)} {
			if !system(d) && !slices.Contains(out, d) && d != "/" {
				out = append(out, d)
			}
		}
		if interp := interpreter(real); interp != "" {
			visit(interp, depth+1)
		}
	}
	visit(program, 0)
	return out
}

// lookPath finds program as the box will: a path as it is (relative to workdir), a bare name on path.
func lookPath(program, workdir, path string) string {
	if strings.Contains(program, "/") {
		if !filepath.IsAbs(program) {
			program = filepath.Join(workdir, program)
		}
		if _, err := os.Stat(program); err != nil {
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

// installDir is the directory to show for the program file real: the outermost node_modules above it (a package
// loads its dependencies from there), else its own directory.
func installDir(real string) string {
	if i := strings.Index(real, "/node_modules/"); i >= 0 {
		return real[:i+len("/node_modules")]
	}
	return filepath.Dir(real)
}

// interpreter is the program a script's #! line runs (for "#!/usr/bin/env node", node), "" for a binary.
func interpreter(file string) string {
	f, err := os.Open(file)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 256)
	n, _ := f.Read(head)
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

func system(dir string) bool {
	for _, p := range systemPrefixes {
		if strings.HasPrefix(dir+"/", p) {
			return true
		}
	}
	return false
}
