package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox"
)

// Checker runs a task's hidden check in a working copy: the test files put back as they were at the base, the
// test patch applied, then the task's setup and check commands, in a box where Host is set. ace eval build
// validates tasks with it (on the base, and on the base with the gold patch); ace eval run is to score an agent's
// work with the same Check on a copy holding that work.
//
// The working copy must be one ace made (workspace.Detached): git runs on the host in it, and an agent's .git
// (its configuration, its hooks) is hostile.
type Checker struct {
	// Host builds the boxes; nil runs the commands unboxed (sandbox mode off, or auto where boxes do not work).
	Host *sandbox.Host
	// Self is ace's executable, the box's first process ("" is os.Executable()).
	Self string
	// ReadOnly and ReadWrite are the host paths a box sees besides the working copy and Home: the mirror's
	// objects the copy borrows and [sandbox] read_only; the repository's dependency caches.
	ReadOnly, ReadWrite []string
	// Hide are host paths a box must not see even below a path it shows: ace's root, the user's home.
	Hide []string
	// Env is every command's environment before the task's own (CheckEnv) and ace's: the host's plain variables
	// and the dependency caches. Nothing else of ace's environment reaches a check.
	Env map[string]string
	// Home is $HOME of the commands (the box's home): a directory of this checker's own.
	Home string
	// Log, when set, gets every command's output.
	Log io.Writer
	// LogMu serializes writes to Log among checkers that share it.
	LogMu *sync.Mutex
}

// CheckerFor is the checker of repo's tasks as ace.toml has it: in a box where [sandbox] mode (global, then
// [repos."owner/name".sandbox]) is on, or auto and boxes work here; unboxed where it is off, or auto without boxes
// (unboxed then says why). A box sees the working copy, the checker's home, the objects of mirror (the copies
// borrow them; none for mirror ""), [sandbox] read_only and the repository's dependency caches (caches: "NAME=dir", as
// workspace.Manager.DepCacheEnv gives them), with ace's root, the user's home and the secrets file hidden, and it
// has no network. self is ace's executable, the box's first process. Home is the caller's to set.
func CheckerFor(ctx context.Context, cfg *config.Config, repo, mirror string, caches []string, self string) (c Checker, unboxed string, err error) {
	sb := cfg.SandboxFor("", repo)
	env := sandbox.HostVars()
	var rw []string
	for _, kv := range caches {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
		rw = append(rw, v)
	}
	var ro []string
	if mirror != "" { // "": the copies hold their own objects (ace eval run's)
		ro = append(ro, filepath.Join(mirror, "objects"))
	}
	for _, p := range sb.ReadOnly {
		if _, err := os.Stat(p); err == nil {
			ro = append(ro, p)
		}
	}
	hide := []string{cfg.Workspace.Root}
	if h, err := os.UserHomeDir(); err == nil && h != "/" {
		hide = append(hide, h)
	}
	if cfg.Secrets.File != "" {
		hide = append(hide, cfg.Secrets.File)
	}
	c = Checker{Self: self, ReadOnly: ro, ReadWrite: rw, Hide: hide, Env: env}
	if sb.Mode == config.SandboxOff {
		return c, "[sandbox] mode is off", nil
	}
	host, err := sandbox.Detect(ctx)
	switch {
	case err == nil:
		c.Host = host
		return c, "", nil
	case sb.Mode == config.SandboxOn:
		return c, "", fmt.Errorf("[sandbox] mode is on and %w", err)
	}
	return c, err.Error(), nil
}

// Outcome is what one check said.
type Outcome struct {
	// Applied is false when the test patch did not apply to the working copy; Why then says why.
	Applied bool
	Why     string
	Passed  bool
	// TimedOut says the check (with its setup) did not end within the task's check timeout: it did not pass.
	TimedOut bool
	Took     time.Duration
	// CPU is the user and system time of the commands' processes, as the shell that waited for them counted it
	// (cpuShell); 0 when a command was cut short.
	CPU time.Duration
	// Output is the end of the commands' output.
	Output string
}

// outputTail bounds the output an Outcome keeps.
const outputTail = 8 << 10

// Check runs t's hidden check in dir. An error is a failure of ace's own (git, the box), never the check's.
func (c *Checker) Check(ctx context.Context, dir string, t *Task) (Outcome, error) {
	if err := resetTests(ctx, dir, t); err != nil {
		return Outcome{}, err
	}
	if err := applyPatch(ctx, dir, t.TestPatch); err != nil {
		return Outcome{Why: err.Error()}, nil
	}
	if err := os.MkdirAll(c.Home, 0o700); err != nil {
		return Outcome{}, err
	}
	env := maps.Clone(c.Env)
	if env == nil {
		env = map[string]string{}
	}
	maps.Copy(env, t.CheckEnv)
	env["HOME"], env["CI"], env["ACE_REPO"] = c.Home, "1", t.Repo
	// What the check tests: the files of the test patch, one a line (a check may test only their packages).
	env["ACE_EVAL_TEST_FILES"] = strings.Join(t.TestFiles, "\n")
	out := Outcome{Applied: true}
	cctx, cancel := context.WithTimeout(ctx, t.CheckTimeout())
	defer cancel()
	start := time.Now()
	buf := &tail{limit: outputTail}
	var err error
	for _, argv := range append(append([][]string{}, t.Setup...), t.Check) {
		var cpu time.Duration
		cpu, err = c.run(cctx, dir, argv, env, buf)
		out.CPU += cpu
		if err != nil {
			break
		}
	}
	out.Took, out.Output = time.Since(start), buf.String()
	switch {
	case err == nil:
		out.Passed = true
	case ctx.Err() != nil:
		return Outcome{}, ctx.Err()
	case cctx.Err() != nil:
		out.TimedOut = true
	}
	return out, nil
}

// cpuShell runs a command under sh, which prints, once the command has ended, cpuMark and the times of the
// processes it waited for: a box's PID namespace keeps its processes' usage from ever reaching ace's rusage.
// The command's exit status is the shell's.
var cpuShell = []string{"sh", "-c", `"$@"; s=$?; printf '\n%s\n' '` + cpuMark + `' >&2; times >&2; exit $s`, "sh"}

const cpuMark = "[ace: CPU of the check]"

// run runs argv in dir with exactly env, boxed when the checker has a host, in a process group of its own that
// is killed whole when ctx ends; cpu is what its processes used.
func (c *Checker) run(ctx context.Context, dir string, argv []string, env map[string]string, buf *tail) (cpu time.Duration, err error) {
	if len(argv) == 0 {
		return 0, errors.New("an empty command")
	}
	start := time.Now()
	shown := argv
	argv = append(slices.Clone(cpuShell), argv...)
	var cmd *exec.Cmd
	if c.Host != nil {
		box, err := c.Host.Wrap(sandbox.Spec{WorkDir: dir, Home: c.Home, ReadOnly: c.ReadOnly, ReadWrite: c.ReadWrite,
			Hide: c.Hide, Env: env, Self: c.Self}, argv)
		if err != nil {
			return 0, fmt.Errorf("box the check: %w", err)
		}
		cmd = box.Command(ctx)
	} else {
		cmd = exec.CommandContext(ctx, argv[0], argv[1:]...)
		environ := make([]string, 0, len(env))
		for k, v := range env {
			environ = append(environ, k+"="+v)
		}
		cmd.Env = environ
	}
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = buf, buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	mark := buf.count()
	err = cmd.Run()
	cpu = buf.takeCPU(mark)
	if err != nil {
		fmt.Fprintf(buf, "\n[ace: %s: %v]\n", shown[0], err)
	}
	c.log(dir, shown, err, time.Since(start), buf.since(mark))
	return cpu, err
}

func (c *Checker) log(dir string, argv []string, err error, took time.Duration, out string) {
	if c.Log == nil {
		return
	}
	status := "ok"
	if err != nil {
		status = err.Error()
	}
	if c.LogMu != nil {
		c.LogMu.Lock()
		defer c.LogMu.Unlock()
	}
	fmt.Fprintf(c.Log, "== %s `%s` in %s: %s after %s\n%s\n", time.Now().UTC().Format(time.RFC3339), strings.Join(argv, " "),
		filepath.Base(dir), status, took.Round(time.Millisecond), out)
}

// resetTests puts the task's test files back as they were at the base: those the base has are checked out
// from it, the others removed. In a copy of the base it changes nothing.
func resetTests(ctx context.Context, dir string, t *Task) error {
	if len(t.TestFiles) == 0 {
		return nil
	}
	for _, p := range t.TestFiles {
		if err := checkPath(p); err != nil {
			return err
		}
	}
	out, err := git(ctx, dir, nil, append([]string{"ls-tree", "-z", "--name-only", "-r", t.BaseCommit, "--"}, t.TestFiles...)...)
	if err != nil {
		return err
	}
	atBase := nulList(out)
	for _, p := range t.TestFiles {
		if !slices.Contains(atBase, p) {
			if err := removeInside(dir, p); err != nil {
				return fmt.Errorf("remove %s: %w", p, err)
			}
		}
	}
	if len(atBase) == 0 {
		return nil
	}
	_, err = git(ctx, dir, nil, append([]string{"checkout", "-q", t.BaseCommit, "--"}, atBase...)...)
	return err
}

// removeInside removes the file or tree p of the working copy dir, and nothing outside it: where a directory on
// the way is a symbolic link (one the repository holds may point anywhere), p is not in the tree, and nothing
// is removed.
func removeInside(dir, p string) error {
	parts := strings.Split(p, "/")
	at := dir
	for _, c := range parts[:len(parts)-1] {
		at = filepath.Join(at, c)
		fi, err := os.Lstat(at)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return nil // a link or a file where a directory would be
		}
	}
	return os.RemoveAll(filepath.Join(at, parts[len(parts)-1]))
}

// tail keeps the last limit bytes written to it, and counts them all.
type tail struct {
	mu    sync.Mutex
	limit int
	b     []byte
	n     int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	t.n += len(p)
	if over := len(t.b) - t.limit; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

func (t *tail) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n
}

// takeCPU removes from what was written after mark the shell's report of the command's CPU (cpuShell) and
// returns it: the user and system time of its children (the second line of times).
func (t *tail) takeCPU(mark int) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := min(t.n-mark, len(t.b))
	at := bytes.LastIndex(t.b[len(t.b)-kept:], []byte("\n"+cpuMark+"\n"))
	if at < 0 {
		return 0
	}
	at += len(t.b) - kept
	report := string(t.b[at+len(cpuMark)+2:])
	t.n -= len(t.b) - (at + 1)
	t.b = t.b[:at+1]
	lines := strings.Split(strings.TrimSpace(report), "\n")
	if len(lines) != 2 {
		return 0
	}
	var total time.Duration
	for _, f := range strings.Fields(lines[1]) {
		if d, err := time.ParseDuration(f); err == nil {
			total += d
		}
	}
	return total
}

// since is what was written after the count was mark, as far as it is kept.
func (t *tail) since(mark int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := min(t.n-mark, len(t.b))
	return string(t.b[len(t.b)-k:])
}
