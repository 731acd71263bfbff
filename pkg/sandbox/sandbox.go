// Package sandbox builds the box an agent runs in: a bubblewrap (bwrap) container of namespaces that sees the
// run's working copy and the agent's home for this run (read-write), a private /tmp, the system and the paths
// listed read-only, and nothing else of the host — not the user's home, other working copies, ace's root (store,
// logs, secrets), other agents' homes, or the host's processes (own PID namespace). Its network namespace has
// only loopback: the one way out is ace's egress proxy (package egress), reached through a unix socket mounted
// into the box and a forwarder ace runs inside on 127.0.0.1 (see BoxMain). What the box keeps the agent from on
// disk — a hidden path read or written, a write outside its own paths, another process's /proc entry — ace
// __box records through seccomp user notification and reports to ace (Spec.ReportSocket, recorder.go).
//
// Secrets never enter an argv: the box's environment is exactly Box.Env, handed to bwrap as its environment
// (exec.Cmd.Env, or LaunchMain's env file for a tmux pane); bwrap passes it on unchanged. It must be exact at
// bwrap already, because the box's PID 1 is bwrap's own reaper, whose /proc/1/environ the agent can read.
package sandbox

import (
	"context"
	"os/exec"
	"sort"
)

// Paths inside the box.
const (
	// SelfPath is where ace's executable is mounted: the box's first process is `SelfPath __box`.
	SelfPath = "/run/ace/ace"
	// ProxyDir is where the directory of the egress proxy's unix socket is mounted. The directory rather than
	// the socket: a socket that ace, restarted, listens on anew is a new file, which a bind of the old one would
	// never show to a box that outlived the restart.
	ProxyDir = "/run/ace/egress"
	// DefaultProxyPort is the loopback port of the forwarder inside the box (its own network namespace, so
	// any port is free).
	DefaultProxyPort = 3128
)

// Link is a symlink of a box: Path, on the host's paths, leads to Target.
type Link struct{ Path, Target string }

// Spec is what one box sees. Host paths are mounted at the same path inside, so that paths recorded by the
// agent (session files keyed by directory, git alternates) mean the same inside and out.
type Spec struct {
	// WorkDir is the run's working copy: read-write, and the directory the command starts in.
	WorkDir string
	// Home is the agent's home for this run: read-write, and $HOME unless Env says otherwise.
	Home string
	// ReadOnly are further host paths seen read-only: toolchains, package caches, the agent CLI's install
	// directory, the mirror's objects directory a working copy's alternates point to.
	ReadOnly []string
	// Links are symlinks the box has at host paths, each to an absolute target the box shows (a CLI's link in a
	// bin directory, to its package's file): so that a program PATH finds through a link is there without the
	// directory the link sits in. A link below one of the box's mounts or the system's is left out (the mount
	// shows what is there; making it would write the host's directory).
	Links []Link
	// ReadWrite are further host paths seen read-write: the user's login files an agent's home links to (a CLI
	// refreshes its token in place).
	ReadWrite []string
	// Hide are host paths masked (an empty directory, or an empty file) even where a ReadOnly path contains
	// them: ace's root, ~/.ssh. A path of WorkDir, Home or ReadOnly below a hidden one is still mounted.
	Hide []string
	// Env is the command's whole environment: nothing of the caller's is inherited. PATH and HOME get defaults
	// when absent; the proxy variables are set when ProxySocket is.
	Env map[string]string
	// ProxySocket is the host path of the egress proxy's unix socket, in a directory of its own (the directory is
	// what the box sees) with at most the report socket beside it; "" leaves the box without network.
	ProxySocket string
	// ProxyPort is the forwarder's port inside the box; 0 is DefaultProxyPort.
	ProxyPort int
	// Forward are loopback ports of the host the box reaches at the same port of its own loopback: each
	// connection goes through the proxy as a CONNECT to 127.0.0.1:port, allowed (or not) and recorded like any
	// other. A local model server on the host is reached this way. Needs ProxySocket.
	Forward []int
	// Terminal keeps the caller's controlling terminal, as a tmux pane needs: an interactive CLI opens
	// /dev/tty, gets SIGWINCH on a resize and ^C as a signal only when the box stays in the pane's session.
	// The box can then push input into that terminal with TIOCSTI (where the kernel still allows it,
	// dev.tty.legacy_tiocsti): in a tmux pane that input is the agent's own, since the pane dies with the box
	// (remain-on-exit, no shell after it) and a user's `ace attach` is a tmux client on a terminal of its own.
	// Without Terminal the box starts a new session (bwrap --new-session), which rules TIOCSTI out: right for
	// headless runs, which have no terminal to lose.
	Terminal bool
	// ReportSocket, when set, has the box record the file-system attempts it keeps the agent from — a hidden path
	// read or written, a write outside its writable paths, another process's /proc entry — and report them to
	// this socket, which ServeReports answers: the host path of a socket in ProxySocket's directory, named
	// ReportSocketName. "" records nothing.
	ReportSocket string
	// Lookups are paths, relative to a directory, that the agent's CLI reads in every parent of its working copy
	// (its context files: CLAUDE.md, .claude): read above the box's own paths, the recorder does not count them.
	Lookups []string
	// Self is ace's executable on the host, run inside as the box's first process; "" is os.Executable().
	Self string
}

// Box is a command wrapped in a box: run Argv with exactly Env as its environment.
type Box struct {
	Argv []string
	Env  map[string]string
	// ProxyURL is what the box's proxy variables point at; "" without a proxy.
	ProxyURL string
}

// Environ is Env as "KEY=value" strings, sorted.
func (b *Box) Environ() []string {
	env := make([]string, 0, len(b.Env))
	for k, v := range b.Env {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// Command is the box as an exec.Cmd whose environment is exactly Env (what a headless runner starts).
func (b *Box) Command(ctx context.Context) *exec.Cmd {
	cmd := exec.CommandContext(ctx, b.Argv[0], b.Argv[1:]...)
	cmd.Env = b.Environ()
	return cmd
}
