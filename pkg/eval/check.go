package eval

import (
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

// Outcome is what one check said.
type Outcome struct {
	// Applied is false when the test patch did not apply to the working copy; Why then says why.
	Applied bool
	Why     string
	Passed  bool
	// TimedOut says the check (with its setup) did not end within the task's check timeout: it did not pass.
	TimedOut bool
	Took     time.Duration
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
		if err = c.run(cctx, dir, argv, env, buf); err != nil {
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

// run runs argv in dir with exactly env, boxed when the checker has a host, in a process group of its own that
// is killed whole when ctx ends.
func (c *Checker) run(ctx context.Context, dir string, argv []string, env map[string]string, buf *tail) error {
	if len(argv) == 0 {
		return errors.New("an empty command")
	}
	start := time.Now()
	var cmd *exec.Cmd
	if c.Host != nil {
		box, err := c.Host.Wrap(sandbox.Spec{WorkDir: dir, Home: c.Home, ReadOnly: c.ReadOnly, ReadWrite: c.ReadWrite,
			Hide: c.Hide, Env: env, Self: c.Self}, argv)
		if err != nil {
			return fmt.Errorf("box the check: %w", err)
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
	err := cmd.Run()
	if err != nil {
		fmt.Fprintf(buf, "\n[ace: %s: %v]\n", argv[0], err)
	}
	c.log(dir, argv, err, time.Since(start), buf.since(mark))
	return err
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

// since is what was written after the count was mark, as far as it is kept.
func (t *tail) since(mark int) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := min(t.n-mark, len(t.b))
	return string(t.b[len(t.b)-k:])
}
