package sandbox

import (
	"path/filepath"
	"strconv"
	"strings"
)

// AttemptKind says why a path was out of the agent's reach.
type AttemptKind string

// The kinds of file-system attempts a box records.
const (
	// AttemptHidden is a path the box hides (Spec.Hide: ace's root, the user's home, the secrets file), read or
	// written: an empty mask or nothing in the box.
	AttemptHidden AttemptKind = "hidden"
	// AttemptWrite is a write outside the box's writable paths (its working copy, its home, /tmp,
	// Spec.ReadWrite): a read-only or absent path in the box.
	AttemptWrite AttemptKind = "write"
	// AttemptProc is a /proc entry of a PID the box's PID namespace never had: a host process's (the box's /proc
	// shows none of them).
	AttemptProc AttemptKind = "proc"
	// AttemptLoopback is a connection to a port of the box's own loopback where nothing listens: this machine's
	// port of that number is not forwarded into the box (Attempt.Path is the destination, host:port).
	AttemptLoopback AttemptKind = "loopback"
	// AttemptDirect is a connection to another address than the loopback's, which the box has no route to: its
	// one way out is ace's proxy, which the program did not use.
	AttemptDirect AttemptKind = "direct"
	// AttemptDNS is a name lookup of the box's own (a datagram to port 53): the box has no resolver; names go to
	// ace's proxy, which resolves them.
	AttemptDNS AttemptKind = "dns"
)

// Network reports whether the attempt is a connection (Attempt.Path a host:port) rather than a file's.
func (k AttemptKind) Network() bool {
	return k == AttemptLoopback || k == AttemptDirect || k == AttemptDNS
}

// policy is what a box's recorder knows of its mounts: the paths it hides, those it lets the agent write, and
// those it shows read-only below a hidden one (a read there is the box's own). The deepest of them that holds a
// path decides, as the deepest mount does in the box.
type policy struct {
	hide, rw, ro []string
	// lookups are relative paths the CLI reads in each parent of its working copy (Spec.Lookups).
	lookups []string
}

// newPolicy is the policy of a box that s describes: writable are its Spec's paths, its own /tmp and its devices
// (/dev/null, the terminal); /proc is apart (classify).
func newPolicy(s Spec) policy {
	p := policy{hide: cleanAll(s.Hide), rw: cleanAll(append([]string{s.WorkDir, s.Home, "/tmp", "/dev"}, s.ReadWrite...))}
	for _, l := range s.Lookups {
		if l = filepath.Clean(l); l != "." && !filepath.IsAbs(l) && !strings.HasPrefix(l, "..") {
			p.lookups = append(p.lookups, l)
		}
	}
	for _, ro := range cleanAll(s.ReadOnly) {
		if p.hidden(ro) {
			p.ro = append(p.ro, ro) // a read-only path elsewhere reads and writes as the system does: not needed
		}
	}
	return p
}

func cleanAll(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		if filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	return out
}

// hidden reports whether path is below a hidden path, whatever is mounted there.
func (p policy) hidden(path string) bool {
	for _, h := range p.hide {
		if within(path, h) {
			return true
		}
	}
	return false
}

// args are the policy as `ace __box` flags.
func (p policy) args() []string {
	var out []string
	for _, l := range []struct {
		flag  string
		paths []string
	}{{"--hide", p.hide}, {"--rw", p.rw}, {"--ro", p.ro}, {"--lookup", p.lookups}} {
		for _, path := range l.paths {
			out = append(out, l.flag, path)
		}
	}
	return out
}

// classify says whether an attempt at path (absolute, clean, its links resolved), writing or not, is one the box
// records, and of which kind. boxHad reports whether a PID is, or was, a process of the box's PID namespace.
func (p policy) classify(path string, write bool, boxHad func(pid int) bool) (AttemptKind, bool) {
	if within(path, "/sys") {
		// The kernel's interfaces, which the box does not mount: nothing of the user's, and runtimes probe them
		// (claude 2.1.197 opens ftrace's trace_marker for writing at every start).
		return "", false
	}
	if within(path, "/proc") {
		// Only another process's entries: the agent's own, /proc/self, and writes to them are its business.
		if pid, _, ok := cutProcPID(path); ok && !boxHad(pid) {
			return AttemptProc, true
		}
		return "", false
	}
	best, kind := -1, ""
	for _, l := range []struct {
		kind  string
		paths []string
	}{{"ro", p.ro}, {"rw", p.rw}, {"hide", p.hide}} {
		for _, d := range l.paths {
			// The deepest wins; at the same depth a hidden path does, as its mask is mounted last (Spec.mounts).
			if within(path, d) && len(d) >= best {
				best, kind = len(d), l.kind
			}
		}
	}
	switch {
	case kind == "hide" && !write && (p.mountParent(path) || p.lookup(path)):
		// A directory on the way to the box's own mounts (ace's root above the working copy), which the box
		// shows with nothing in it but those, or what the CLI looks up in it: CLIs look for their settings in
		// each parent of their working copy (claude for CLAUDE.md up to /, ~/.claude/CLAUDE.md on the way).
		return "", false
	case kind == "hide":
		return AttemptHidden, true
	case write && kind != "rw":
		return AttemptWrite, true
	}
	return "", false
}

// lookup reports whether path is, or is below, a lookup of the CLI's in a directory above the box's mounts.
func (p policy) lookup(path string) bool {
	if len(p.lookups) == 0 {
		return false
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		rel := strings.TrimPrefix(strings.TrimPrefix(path, dir), "/")
		for _, l := range p.lookups {
			if within(rel, l) && p.mountParent(dir) {
				return true
			}
		}
		if dir == "/" {
			return false
		}
	}
}

// mountParent reports whether path is a directory above one of the box's mounts below a hidden path.
func (p policy) mountParent(path string) bool {
	for _, m := range append(p.rw, p.ro...) {
		if m != path && within(m, path) {
			return true
		}
	}
	return false
}

// cutProcPID splits /proc/N/rest into the PID N and rest; ok is false for a path of /proc that names no PID
// (/proc/self, /proc/meminfo).
func cutProcPID(path string) (pid int, rest string, ok bool) {
	after, found := strings.CutPrefix(path, "/proc/")
	if !found {
		return 0, "", false
	}
	first, rest, _ := strings.Cut(after, "/")
	pid, err := strconv.Atoi(first)
	if err != nil || pid <= 0 || first != strconv.Itoa(pid) {
		return 0, "", false
	}
	return pid, rest, true
}
