// Package demo runs ace's whole loop offline: a local git remote, a local-tracker issue and the scripted fake
// agent in a real tmux session, driven by the same engine `ace run` uses, from the issue to a merged pull
// request — with one CI round on the way: the demo's CI fails on the first push, ace hands the failure to the
// agent, its fix passes and the demo merges. It is README's first command.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker/local"
	"github.com/aceworks/ace/pkg/workflow"
)

// Options configure a demo run.
type Options struct {
	// Dir holds everything the demo creates; "" = a temporary directory removed afterwards.
	Dir string
	// Executable is the ace binary (it runs the launcher and the fake agent in tmux).
	Executable string
	Out        io.Writer
	Logger     *slog.Logger
	// Timeout bounds the whole demo.
	Timeout time.Duration
	// Headless runs the fake agent with the headless runner (runner exec) instead of in tmux.
	Headless bool
}

// Repo and Issue are what the demo works on.
const (
	Repo  = "demo/hello"
	Issue = 1
)

// Run performs the demo and reports on Out. It leaves no process behind: the demo's private tmux server is
// killed at the end, whatever happened.
func Run(ctx context.Context, o Options) (err error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	dir := o.Dir
	if dir == "" {
		if dir, err = os.MkdirTemp("", "ace-demo-"); err != nil {
			return fmt.Errorf("create a demo directory: %w", err)
		}
		defer os.RemoveAll(dir)
	} else if dir, err = filepath.Abs(dir); err != nil {
		return err
	}
	if err := needTools(o.Headless); err != nil {
		return err
	}
	w := &syncWriter{w: o.Out} // the engine reports from its job workers
	fmt.Fprintf(w, "ace demo in %s\n\n", dir)
	cfgPath, err := scaffold(ctx, dir, o.Executable, o.Headless)
	if err != nil {
		return err
	}
	cfg, _, err := config.Load(cfgPath, func(string) string { return "" })
	if err != nil {
		return fmt.Errorf("demo config: %w", err)
	}
	remote := filepath.Join(dir, "remote.git")
	fmt.Fprintf(w, "  remote      %s (a bare git repository)\n", remote)
	fmt.Fprintf(w, "  issue       %s#%d in %s\n", Repo, Issue, filepath.Join(dir, "tracker", "issues", "1.md"))
	if o.Headless {
		fmt.Fprintf(w, "  agent       the scripted fake agent, headless (its JSON stream is the transcript)\n")
		fmt.Fprintf(w, "  watch it    ace --config %s logs %d -f\n", cfgPath, Issue)
	} else {
		fmt.Fprintf(w, "  agent       the scripted fake agent, in tmux\n")
		fmt.Fprintf(w, "  watch it    ace --config %s attach %d   (or peek %d)\n", cfgPath, Issue, Issue)
	}
	fmt.Fprintf(w, "  CI          ci.sh of the repository, on each push to the pull request; merged once it passes\n\n")

	seed, err := git(ctx, remote, "rev-parse", "--verify", "main")
	if err != nil {
		return err
	}
	lt, err := local.New(cfg.Tracker.Path)
	if err != nil {
		return fmt.Errorf("the demo's CI opens the tracker: %w", err)
	}
	// The demo's CI runs while ace reports a push to the pull request, before ace looks at the pull request: CI
	// that answers at once, so the demo waits for nothing. A failure of the CI itself ends the demo.
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	c := &ci{dir: dir, remote: remote, tracker: lt}
	start := time.Now()
	observe := func(p workflow.Progress) {
		progress(w, start, dir, p)
		if p.Kind == workflow.EventKind("follow") && p.Run != nil && p.Run.PRNumber != 0 {
			if err := c.react(ctx, w, start, p.Run); err != nil {
				stop(fmt.Errorf("the demo's CI: %w", err))
			}
		}
	}
	svc, err := service.Open(ctx, service.Options{
		Config:     cfg,
		Secrets:    secrets.NewResolver(secrets.Options{LookupEnv: func(string) (string, bool) { return "", false }}),
		Logger:     o.Logger,
		Executable: o.Executable,
		Observer:   observe,
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	defer func() {
		// The demo's tmux server is its own: end it (and so every process it started) by PID.
		kctx, kcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer kcancel()
		if kerr := svc.Tmux.KillServer(kctx); kerr != nil && err == nil {
			o.Logger.Debug("kill demo tmux server", "err", kerr)
		}
	}()

	if err := svc.StartQueue(ctx); err != nil {
		return err
	}
	run, err := svc.Engine.Open(ctx, workflow.Request{Repo: Repo, Issue: Issue, NewAttempt: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "  %5.1fs  run %d, attempt %d\n", time.Since(start).Seconds(), run.ID, run.Attempt)
	if o.Headless {
		// A headless agent runs outside tmux, under its own supervisor: stop it if the demo ends early.
		defer func() {
			if !run.Status.Terminal() {
				sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				defer scancel()
				_ = svc.Engine.Stop(sctx, run, "the demo ended")
			}
		}()
	}
	if err := svc.Engine.Follow(ctx, run, settled); err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, err) {
			return cause
		}
		return fmt.Errorf("drive the demo run: %w", err)
	}
	return summarize(ctx, w, dir, strings.TrimSpace(seed), run, time.Since(start))
}

// settled is when the demo stops following its run: it ended, or it waits for a human (which in the demo means
// something went wrong: its agent asks nothing, and the CI passes after one round).
func settled(r *store.Run) bool {
	return r.Status.Terminal() || r.Status == store.StatusWaitingInput ||
		r.State.Follow != nil && r.State.Follow.NeedsHuman
}

// needTools fails early, saying what to install, when git or tmux (unless headless) is missing.
func needTools(headless bool) error {
	var missing []string
	tools := []string{"git", "tmux"}
	if headless {
		tools = tools[:1]
	}
	for _, t := range tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the demo needs %s: install with `sudo apt-get install %s` (or your system's package manager)",
			strings.Join(missing, " and "), strings.Join(missing, " "))
	}
	return nil
}

// progress prints an event of the run; paths under the demo's directory dir are shown relative to it.
func progress(w io.Writer, start time.Time, dir string, p workflow.Progress) {
	t := time.Since(start).Seconds()
	switch p.Kind {
	case "step":
		fmt.Fprintf(w, "  %5.1fs  → %s\n", t, p.Step)
	default:
		msg := strings.ReplaceAll(strings.ReplaceAll(p.Message, "file://"+dir+"/", ""), dir+"/", "")
		fmt.Fprintf(w, "  %5.1fs      %s: %s\n", t, p.Kind, msg)
	}
}

// summarize prints the outcome: the commits the pull request brought (since seed, the base it started from),
// its diff, and the pull request the local tracker recorded.
func summarize(ctx context.Context, w io.Writer, dir, seed string, r *store.Run, took time.Duration) error {
	rounds := 0
	if r.State.Follow != nil {
		rounds = r.State.Follow.Rounds
	}
	fmt.Fprintf(w, "\nrun %d ended %s after %s", r.ID, r.Status, took.Round(100*time.Millisecond))
	if r.Status == store.StatusDone {
		fmt.Fprintf(w, ": pull request #%d merged after %d follow-up round(s)", r.PRNumber, rounds)
	}
	fmt.Fprintln(w)
	if r.Status != store.StatusDone {
		return fmt.Errorf("the demo run is %s at %s, not done: %s", r.Status, r.Step, r.Error)
	}
	remote := filepath.Join(dir, "remote.git")
	fmt.Fprintf(w, "\nbranch %s, merged into %s:\n", r.Branch, r.BaseBranch)
	out, err := git(ctx, remote, "log", "--format=  %h %s (%an)", seed+".."+r.Branch)
	if err != nil {
		return err
	}
	fmt.Fprint(w, out)
	diff, err := git(ctx, remote, "diff", "--stat", "-p", seed+"..."+r.Branch)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\ndiff:\n%s", indent(diff))
	pr, err := os.ReadFile(filepath.Join(dir, "tracker", "pulls", strconv.Itoa(r.PRNumber)+".md"))
	if err != nil {
		return fmt.Errorf("read the pull request the local tracker recorded: %w", err)
	}
	fmt.Fprintf(w, "\npull request #%d (%s):\n%s\n", r.PRNumber, r.PRURL, indent(string(pr)))
	return nil
}

func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, ee.Stderr)
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}

func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// syncWriter serializes writes to w.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
