package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// systemDirs are seen read-only (or as the same symlink, on a merged-/usr system).
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles is the least of /etc that programs need: users and groups by name, the dynamic linker, TLS roots,
// time zone, git's system config, terminfo. Not /etc at large: hosts' configs hold credentials often enough.
var etcFiles = []string{
	"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts", "/etc/host.conf",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
	"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki", "/etc/crypto-policies",
	"/etc/localtime", "/etc/timezone", "/etc/gitconfig", "/etc/os-release", "/etc/terminfo", "/etc/mime.types",
	"/etc/inputrc",
}

// mount is one mount of a box; kind orders mounts at the same depth (a hide after a bind of the same path).
type mount struct {
	kind int // kindRO, kindRW, kindHide
	path string
	file bool // a hidden file, masked with /dev/null rather than an empty directory
}

const (
	kindRO = iota
	kindRW
	kindHide
)

// bwrapArgs is the argv of a box (without bwrap's own path) whose command is inner; self, when not "", is ace's
// executable, mounted at SelfPath.
func (h *Host) bwrapArgs(s Spec, self string, inner []string) ([]string, error) {
	args := []string{"--die-with-parent", "--unshare-all", "--unshare-user", "--cap-drop", "ALL"}
	if h.disableUserns {
		// No nested user namespaces: they are where most unprivileged kernel exploits start.
		args = append(args, "--disable-userns")
	}
	if !s.Terminal {
		args = append(args, "--new-session")
	}
	args = append(args, "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp")
	for _, d := range systemDirs {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(d)
			if err != nil {
				return nil, fmt.Errorf("sandbox: %w", err)
			}
			args = append(args, "--symlink", target, d)
		case fi.IsDir():
			args = append(args, "--ro-bind", d, d)
		}
	}
	for _, f := range etcFiles {
		if _, err := os.Stat(f); err == nil {
			args = append(args, "--ro-bind", f, f)
		}
	}
	mounts, err := s.mounts()
	if err != nil {
		return nil, err
	}
	var masks []string
	for _, m := range mounts {
		switch {
		case m.kind == kindRO:
			args = append(args, "--ro-bind", m.path, m.path)
		case m.kind == kindRW:
			args = append(args, "--bind", m.path, m.path)
		case m.file:
			args = append(args, "--ro-bind", "/dev/null", m.path)
		default:
			args = append(args, "--tmpfs", m.path)
			masks = append(masks, m.path)
		}
	}
	for _, l := range s.links(mounts) {
		args = append(args, "--symlink", l.Target, l.Path)
	}
	if self != "" {
		args = append(args, "--ro-bind", self, SelfPath)
	}
	if s.ProxySocket != "" {
		args = append(args, "--ro-bind", filepath.Dir(s.ProxySocket), ProxyDir)
	}
	// The root and the masks are tmpfs: made read-only last (once the mount points below them exist), so that a
	// write outside the mounts above fails rather than vanishing. A remount is not recursive: binds stay as they are.
	for _, m := range masks {
		args = append(args, "--remount-ro", m)
	}
	args = append(args, "--remount-ro", "/", "--chdir", s.WorkDir, "--")
	return append(args, inner...), nil
}

// mounts are the Spec's own mounts, parents before children so that a path below a hidden one is mounted over
// the mask (ace's mirror objects below ace's hidden root, say). A hidden path that does not exist, or that no
// mount contains, is absent from the box anyway: it gets no mask (whose mount point would name it).
func (s Spec) mounts() ([]mount, error) {
	var ms []mount
	add := func(kind int, paths ...string) error {
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				return fmt.Errorf("sandbox: %q is not an absolute path", p)
			}
			p = filepath.Clean(p)
			fi, err := os.Stat(p)
			switch {
			case kind == kindHide && errors.Is(err, os.ErrNotExist):
			case err != nil:
				return fmt.Errorf("sandbox: %w", err)
			default:
				ms = append(ms, mount{kind: kind, path: p, file: !fi.IsDir()})
			}
		}
		return nil
	}
	rw := []string{s.WorkDir}
	if s.Home != "" {
		rw = append(rw, s.Home)
	}
	if err := errors.Join(add(kindRO, s.ReadOnly...), add(kindRW, rw...), add(kindRW, s.ReadWrite...), add(kindHide, s.Hide...)); err != nil {
		return nil, err
	}
	binds := slices.DeleteFunc(slices.Clone(ms), func(m mount) bool { return m.kind == kindHide })
	ms = slices.DeleteFunc(ms, func(h mount) bool {
		return h.kind == kindHide && !slices.ContainsFunc(binds, func(b mount) bool { return within(h.path, b.path) })
	})
	sort.SliceStable(ms, func(i, j int) bool {
		di, dj := depth(ms[i].path), depth(ms[j].path)
		if di != dj {
			return di < dj
		}
		return ms[i].kind < ms[j].kind
	})
	return ms, nil
}

// links are the Spec's links that the box can make: absolute, in no mount of its own nor the system's (where
// they would be made on the host's file system, or on a read-only one).
func (s Spec) links(mounts []mount) []Link {
	var out []Link
	for _, l := range s.Links {
		p := filepath.Clean(l.Path)
		if !filepath.IsAbs(p) || !filepath.IsAbs(l.Target) || p == "/" {
			continue
		}
		inside := slices.ContainsFunc(mounts, func(m mount) bool { return m.kind != kindHide && within(p, m.path) }) ||
			slices.ContainsFunc(append(slices.Clone(systemDirs), "/etc", "/proc", "/dev"), func(d string) bool { return within(p, d) })
		if !inside {
			out = append(out, Link{Path: p, Target: l.Target})
		}
	}
	return out
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}

func depth(p string) int { return strings.Count(p, "/") }

// environ is the box's environment: the Spec's, with PATH and HOME when absent and the proxy variables.
func (s Spec) environ() (map[string]string, string, error) {
	env := map[string]string{}
	for k, v := range s.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			return nil, "", fmt.Errorf("sandbox: bad environment variable %q", k)
		}
		env[k] = v
	}
	if _, ok := env["PATH"]; !ok {
		env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
	}
	if _, ok := env["HOME"]; !ok {
		env["HOME"] = s.Home
	}
	if s.ProxySocket == "" {
		return env, "", nil
	}
	port := s.ProxyPort
	if port == 0 {
		port = DefaultProxyPort
	}
	proxy := "http://127.0.0.1:" + strconv.Itoa(port)
	for _, k := range []string{"HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"} {
		env[k], env[strings.ToLower(k)] = proxy, proxy
	}
	// The box's own loopback (an MCP server the agent starts, say) is not the proxy's business.
	env["NO_PROXY"], env["no_proxy"] = "localhost,127.0.0.1,::1", "localhost,127.0.0.1,::1"
	// Node's built-in fetch honours the variables above only when asked (Node ≥ 22.21 / 24).
	env["NODE_USE_ENV_PROXY"] = "1"
	return env, proxy, nil
}
