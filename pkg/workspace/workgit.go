package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/sandbox"
	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/untrusted"
)

// Everything in a working copy is the agent's, its .git included, and git acts on what it finds there: hooks,
// an fsmonitor, filter, diff and merge drivers, a pager, includes, remotes with their url rewrites and proxies,
// a lazy fetch of a "partial clone", alternates, replace refs, a commondir or a gitfile sending it to another
// repository. So ace never runs git on a working copy as itself. Every such command goes through Workspace.git
// (Workspace.start for a stream), which
//   - runs it in a box of its own where boxes work here (sandbox.Host.Plain): the working copy read-write, the
//     repository's mirror objects read-only (named by ace's record, never by the copy's alternates), the system
//     read-only, no network, nothing of ace's or the user's. Whatever git is made to run in there — that is the
//     construction: ace need not know every mechanism — can do no more than the agent in its own box, less: it
//     has no network and no secret, and lives only as long as the command;
//   - gives it an environment ace makes whole: no token, no HOME of the user nor any global or system
//     configuration, GIT_DIR, GIT_WORK_TREE and GIT_COMMON_DIR named (a commondir file is not followed), replace
//     refs off, no transport at all (GIT_ALLOW_PROTOCOL empty outranks every protocol.* setting), and on its
//     command line (which outranks the copy's configuration) no hooks, no fsmonitor, no signing, no automatic
//     gc or maintenance — so that ace's own commit and reads come out the same whatever the agent configured;
//   - refuses a .git that is not the directory ace made (a symlink, a gitfile);
//   - ends it, box and all, after Options.GitTimeout: a FIFO where git reads a file (a .gitignore) never ends;
//   - keeps at most gitOutputMax bytes of what it prints and gitErrMax of its errors, sanitized.
// Where boxes do not work here (no bubblewrap, no user namespaces), the same command runs on the host with the
// same environment and an empty home of ace's: hooks, fsmonitor, signing and transports stay out, but a filter
// or diff driver the copy's own configuration defines would run. An agent that runs unboxed runs as the user
// anyway, with all the user's files (README, "The sandbox").

const (
	gitOutputMax = 8 << 20
	gitErrMax    = 4 << 10
)

// ErrRefused is what errors match when ace would not act on a working copy as the agent left it: its .git not
// the directory ace made, git there not ending in time, the branch not where ace's record says, and the like.
var ErrRefused = errors.New("ace refused the working copy as the agent left it")

// refusal is an error that is ErrRefused and says what was refused.
type refusal string

func (r refusal) Error() string        { return string(r) }
func (r refusal) Is(target error) bool { return target == ErrRefused }

func refusedf(format string, args ...any) error { return refusal(fmt.Sprintf(format, args...)) }

// workFlags come first on every git command line on a working copy (see above).
var workFlags = []string{
	"-c", "core.hooksPath=/dev/null", // /dev/null/<hook> is nothing git can run
	"-c", "core.fsmonitor=false",
	"-c", "commit.gpgSign=false",
	"-c", "gc.auto=0",
	"-c", "maintenance.auto=false",
	"-c", "submodule.recurse=false",
}

// git runs git with args on the working copy (stdin may be nil) and returns what it printed, trimmed.
func (w *Workspace) git(ctx context.Context, stdin io.Reader, args ...string) (string, error) {
	out := &capped{max: gitOutputMax}
	c, err := w.start(ctx, stdin, out, args...)
	if err != nil {
		return "", err
	}
	err = c.wait() // before the output is read: it is whole only then
	return strings.TrimSpace(out.String()), err
}

// workCmd is a git command started on a working copy.
type workCmd struct {
	cmd     *exec.Cmd
	stderr  *capped
	args    []string
	ctx     context.Context // the caller's
	tctx    context.Context // ctx with the timeout
	timeout time.Duration
	cancel  context.CancelFunc
}

// start starts git with args on the working copy, what it prints going to stdout.
func (w *Workspace) start(ctx context.Context, stdin io.Reader, stdout io.Writer, args ...string) (*workCmd, error) {
	c, err := w.command(ctx, stdin, args...)
	if err != nil {
		return nil, err
	}
	c.cmd.Stdout = stdout
	if err := c.cmd.Start(); err != nil {
		c.cancel()
		return nil, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return c, nil
}

// command prepares git with args on the working copy: boxed where boxes work, never started.
func (w *Workspace) command(ctx context.Context, stdin io.Reader, args ...string) (*workCmd, error) {
	m := w.m
	if err := w.checkDotGit(); err != nil {
		return nil, err
	}
	bin, err := m.gitBinary(ctx)
	if err != nil {
		return nil, err
	}
	dot := filepath.Join(w.Dir, ".git")
	env := map[string]string{
		"PATH":    "/usr/local/bin:/usr/bin:/bin",
		"LC_ALL":  "C",
		"GIT_DIR": dot, "GIT_COMMON_DIR": dot, "GIT_WORK_TREE": w.Dir,
		"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_ATTR_NOSYSTEM": "1",
		"GIT_NO_REPLACE_OBJECTS": "1",
		"GIT_ALLOW_PROTOCOL":     "",
		"GIT_TERMINAL_PROMPT":    "0",
		"GIT_OPTIONAL_LOCKS":     "0",
		"GIT_PAGER":              "cat", "GIT_EDITOR": ":", "GIT_SEQUENCE_EDITOR": ":",
		"GIT_AUTHOR_NAME": m.o.AuthorName, "GIT_AUTHOR_EMAIL": m.o.AuthorEmail,
		"GIT_COMMITTER_NAME": m.o.AuthorName, "GIT_COMMITTER_EMAIL": m.o.AuthorEmail,
	}
	argv := append(append([]string{bin.path}, workFlags...), "-c", "core.excludesFile="+aceExcludeFile(w.Dir))
	argv = append(argv, args...)
	host, boxErr := m.o.Boxes.Host(ctx)
	if boxErr == nil {
		ro := slices.Clone(bin.dirs) // bin is shared
		if objects, err := m.mirrorObjects(w.Repo); err == nil {
			ro = append(ro, objects)
		}
		b, err := host.Plain(sandbox.Spec{WorkDir: w.Dir, ReadOnly: ro, Env: env}, argv)
		if err != nil {
			return nil, fmt.Errorf("box git for %s: %w", w.Dir, err)
		}
		argv, env = b.Argv, b.Env
	} else {
		home, err := m.emptyHome()
		if err != nil {
			return nil, err
		}
		env["HOME"] = home
	}
	tctx, cancel := context.WithTimeout(ctx, m.o.GitTimeout)
	cmd := exec.CommandContext(tctx, argv[0], argv[1:]...)
	cmd.Dir = w.Dir
	cmd.Env = make([]string, 0, len(env))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = stdin
	c := &workCmd{cmd: cmd, stderr: &capped{max: gitErrMax}, args: args, ctx: ctx, tctx: tctx, timeout: m.o.GitTimeout, cancel: cancel}
	cmd.Stderr = c.stderr
	// Its own process group, ended whole: git's children, or bwrap (whose box dies with it, --die-with-parent).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return c, nil
}

// wait waits for the command and says why it failed: git's own words, or that ace stopped it.
func (c *workCmd) wait() error {
	defer c.cancel()
	if err := c.cmd.Wait(); err != nil {
		return c.failed(err)
	}
	return nil
}

// failed is err of the command, with what git said (sanitized, one line: it may quote the agent's files, never
// ace's or the user's, which a box does not see) or, when it ran out of time, a refusal.
func (c *workCmd) failed(err error) error {
	what := "git " + strings.Join(c.args, " ")
	switch {
	case c.ctx.Err() != nil:
		return fmt.Errorf("%s: %w", what, c.ctx.Err())
	case errors.Is(c.tctx.Err(), context.DeadlineExceeded):
		return refusedf("%s did not end within %s in the working copy, and ace stopped it: something there never "+
			"ends where git reads a file (a FIFO?)", what, c.timeout)
	}
	return fmt.Errorf("%s: %w: %s", what, err, sanitize.Line(c.stderr.String()))
}

// checkDotGit refuses a working copy whose .git is not a directory: ace made one, and git would follow a
// symlink or a gitfile ("gitdir: …") elsewhere. Inside a box that could reach nothing, but what git then
// reports would not be this working copy's.
func (w *Workspace) checkDotGit() error {
	fi, err := os.Lstat(filepath.Join(w.Dir, ".git"))
	switch {
	case err != nil:
		return refusedf("the working copy %s has no .git (ace made one): %v", w.Dir, errors.Unwrap(err))
	case fi.Mode()&os.ModeSymlink != 0:
		return refusedf("the working copy's .git is a symbolic link, not the directory ace made: ace does not follow it")
	case !fi.IsDir():
		return refusedf("the working copy's .git is %s, not the directory ace made: ace does not follow it", untrusted.Kind(fi.Mode()))
	}
	return nil
}

// capped keeps the first max bytes written to it and takes (drops) the rest.
type capped struct {
	max int
	b   bytes.Buffer
	cut bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); room < len(p) {
		c.cut = true
		c.b.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.b.Write(p)
}

func (c *capped) String() string { return c.b.String() }

// gitBin is the git binary a working copy's commands run: its path, and the directories a box must show for it
// when they are not the system's (a git built into ~/opt, say).
type gitBin struct {
	path string
	dirs []string
}

// gitBinary finds Options.GitPath and git's own directory of helpers, once.
func (m *Manager) gitBinary(ctx context.Context) (*gitBin, error) {
	m.binMu.Lock()
	defer m.binMu.Unlock()
	if m.bin != nil {
		return m.bin, nil
	}
	path, err := exec.LookPath(m.o.GitPath)
	if err == nil {
		path, err = filepath.Abs(path)
	}
	if err != nil {
		return nil, fmt.Errorf("find git (%s): %w", m.o.GitPath, err)
	}
	exec, err := m.git(ctx, "", "--exec-path")
	if err != nil {
		return nil, err
	}
	b := &gitBin{path: path}
	for _, d := range []string{filepath.Dir(path), exec} {
		if !underSystem(d) {
			b.dirs = append(b.dirs, d)
		}
	}
	m.bin = b
	return b, nil
}

// underSystem reports whether dir is below a directory every box shows read-only.
func underSystem(dir string) bool {
	for _, s := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib64"} {
		if dir == s || strings.HasPrefix(dir, s+"/") {
			return true
		}
	}
	return false
}

// mirrorObjects is the object directory of repo's mirror, which its working copies borrow (alternates): ace's own,
// by its own name, whatever a copy's objects/info/alternates says. Copies that hold their own objects
// (Options.OwnObjects) borrow none: no box is shown the mirror.
func (m *Manager) mirrorObjects(repo string) (string, error) {
	if m.o.OwnObjects {
		return "", fmt.Errorf("the working copies of %s borrow no objects", repo)
	}
	mirror, err := m.mirrorPath(repo)
	if err != nil {
		return "", err
	}
	objects := filepath.Join(mirror, "objects")
	if fi, err := os.Stat(objects); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("no mirror objects for %s", repo)
	}
	return objects, nil
}

// MirrorObjects is mirrorObjects for the boxes of repo's agents, which see it read-only: the objects their working
// copies borrow.
func (m *Manager) MirrorObjects(repo string) (string, error) { return m.mirrorObjects(repo) }

// emptyHome is the HOME of git on a working copy where it runs unboxed: a directory of ace's with nothing in it,
// so that no configuration, attributes or excludes of the user's apply.
func (m *Manager) emptyHome() (string, error) {
	home, err := m.under("run", "git-home")
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return "", fmt.Errorf("git's empty home: %w", err)
	}
	return home, nil
}
