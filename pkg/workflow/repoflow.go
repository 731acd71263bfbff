package workflow

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/tracker"
	"github.com/aceworks/ace/pkg/transcript"
	"github.com/aceworks/ace/pkg/untrusted"
	"github.com/aceworks/ace/pkg/workspace"
)

// repoFlow is the repository's own workflow (.ace/workflow.toml): setup commands before the agent starts and verify
// commands before the pull request, each in the agent's environment.
type repoFlow struct {
	core     repoFlowCore
	mirrors  repoMirror // nil: a Workspaces without mirrors (tests of other parts) has no workflow files
	secrets  Secrets
	tracker  repoFlowTracker
	profiles func(name string) (agents.Profile, error) // the repository's agent, checked
	agent    *runAgent
	memory   *memoryKeeper // the secrets a command's output is redacted of
	box      *runbox.Boxes
	follow   *followThrough // a failed verify goes back to the agent as a round
	status   *reporter
	cfg      *config.Config
	root     string    // workspace.root: the workflow logs
	files    fileCache // the workflow file of each commit read
	now      func() time.Time
	log      *slog.Logger
}

// repoFlowCore is what the repository's workflow needs of the engine's core: the run's events and its record of
// files of the working copy ace refused, or cannot go on without.
type repoFlowCore interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
	noteRefusal(ctx context.Context, r *store.Run, err error) bool
	needFile(ctx context.Context, r *store.Run, what string, err error) error
}

// repoFlowTracker is the tracker as the repository's workflow uses it: its labels put on the pull request.
type repoFlowTracker interface {
	AddLabels(ctx context.Context, repo string, number int, labels ...string) error
}

// A repository's workflow (.ace/workflow.toml on its default branch, under ace.toml's [repos."owner/name"]) is
// read from ace's mirror at prepare_workspace — a bad file fails the run there, before any agent starts — and
// its commit is kept in the run, so that every later step reads the same file. Setup runs once in the new
// working copy; verify runs at finalize, and a failure goes back to the agent as a round, like a failed check
// on its pull request.

// repoMirror is a Workspaces that can say where a repository's mirror is and which dependency caches its
// working copies share (the workspace manager).
type repoMirror interface {
	MirrorPath(repo string) (string, error)
	DepCacheEnv(repo string) ([]string, error)
}

// issueMirror is a Workspaces whose repository is one of each issue's own (ace eval's: an item's cut base, which
// holds the task's past alone, its default branch at the task's base commit): an issue's workflow is read from
// there, never from a mirror whose default branch is from after the task.
type issueMirror interface {
	IssueMirrorPath(repo string, issue int) (string, error)
}

// mirrorOf is where run r's workflow file is read: its issue's own repository when the Workspaces keeps one, else
// the repository's mirror.
func mirrorOf(m repoMirror, r *store.Run) (string, error) {
	if im, ok := m.(issueMirror); ok {
		return im.IssueMirrorPath(r.Repo, r.Issue)
	}
	return m.MirrorPath(r.Repo)
}

// verifyFile holds the end of a failed verify's output in the working copy; like all of .ace/ it is git-excluded.
const verifyFile = ".ace/VERIFY.md"

// outputLimit bounds the output of a setup or verify command ace keeps; the tail is what matters.
const outputLimit = 1 << 20

// prepareRepoflow reads the repository's workflow, applies its agent and model, and runs its setup once.
func (fl *repoFlow) prepareRepoflow(ctx context.Context, r *store.Run, ws *workspace.Workspace, defaultBranch string) error {
	m, ok := fl.mirrors, fl.mirrors != nil
	if !ok {
		return nil // a Workspaces without mirrors (tests of other parts) has no workflow files
	}
	st := cloneWorkflowState(r.State.Workflow)
	if st.Rev == "" {
		mirror, err := mirrorOf(m, r)
		if err != nil {
			return Terminal(err)
		}
		rev, err := gitText(ctx, mirror, "rev-parse", "--verify", "-q", "refs/heads/"+defaultBranch+"^{commit}")
		if err != nil {
			return fmt.Errorf("find %s in the mirror: %w", defaultBranch, err)
		}
		st.Rev = rev
		r.State.Workflow = st
	}
	wf, err := fl.repoWorkflow(ctx, r)
	if err != nil {
		return err
	}
	if wf.Agent != "" && wf.Agent != r.Agent && (r.Agent == fl.cfg.Agent.Default || r.State.AgentAuto != "") {
		prof, err := fl.profiles(wf.Agent)
		if err != nil {
			return Terminal(fmt.Errorf("the repository's workflow: agent %q: %w", wf.Agent, err))
		}
		r.Agent, r.Runner = wf.Agent, runnerOf(prof)
		fl.core.event(ctx, r, "workflow", "agent "+wf.Agent+" (the repository's workflow)")
	}
	if wf.Model != "" && r.State.Model == "" {
		r.State.Model = wf.Model
	}
	if st.SetupDone {
		return nil
	}
	if err := fl.runSetup(ctx, r, ws, m, wf); err != nil {
		return err
	}
	st = cloneWorkflowState(r.State.Workflow)
	st.SetupDone = true
	r.State.Workflow = st
	return nil
}

// repoWorkflow is the run's workflow: its repository's file at the run's commit, merged under ace.toml's table.
// A bad file is a terminal error naming the file, the line and the key.
func (fl *repoFlow) repoWorkflow(ctx context.Context, r *store.Run) (config.RepoWorkflow, error) {
	var file *config.RepoWorkflow
	m, ok := fl.mirrors, fl.mirrors != nil
	if ok && r.State.Workflow != nil && r.State.Workflow.Rev != "" {
		mirror, err := mirrorOf(m, r)
		if err != nil {
			return config.RepoWorkflow{}, Terminal(err)
		}
		data, found, err := fl.files.readAt(ctx, mirror, r.State.Workflow.Rev, config.WorkflowFile)
		if err != nil {
			return config.RepoWorkflow{}, err
		}
		if found {
			if file, err = config.ParseWorkflow(config.WorkflowFile, data); err != nil {
				return config.RepoWorkflow{}, Terminal(workflowErr(err))
			}
		}
	}
	wf, err := fl.cfg.Workflow(r.Repo, file)
	if err != nil {
		return config.RepoWorkflow{}, Terminal(workflowErr(err))
	}
	return wf, nil
}

// workflowErr puts every problem of a workflow on one line: it heads the failed run's status comment.
func workflowErr(err error) error {
	return fmt.Errorf("the repository's workflow is invalid: %s", strings.ReplaceAll(err.Error(), "\n", "; "))
}

func gitText(ctx context.Context, gitDir string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "git", append([]string{"--git-dir", gitDir}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// runSetup writes the env files and runs the setup commands in the working copy, within setup_timeout.
func (fl *repoFlow) runSetup(ctx context.Context, r *store.Run, ws *workspace.Workspace, m repoMirror, wf config.RepoWorkflow) error {
	if len(wf.Setup) == 0 && len(wf.EnvFiles) == 0 {
		return nil
	}
	red, fileSecrets, err := fl.workflowSecrets(ctx, r, wf)
	if err != nil {
		return err
	}
	if err := writeEnvFiles(ctx, ws, wf.EnvFiles, fileSecrets); err != nil {
		if fl.core.noteRefusal(ctx, r, err) {
			return Terminal(err)
		}
		return err
	}
	env, err := fl.commandEnv(r, m, wf, red)
	if err != nil {
		return err
	}
	sctx, cancel := context.WithTimeout(ctx, wf.SetupTimeout.Duration)
	defer cancel()
	for i, argv := range wf.Setup {
		out, err := fl.runCommand(sctx, r, "setup", argv, env, red)
		if err != nil {
			if sctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("setup_timeout (%s) passed", wf.SetupTimeout.Duration)
			}
			return Terminal(fmt.Errorf("setup command %d (`%s`) failed: %w; the end of its output:\n%s", i+1,
				config.Command(argv), err, transcript.Last(out, 2<<10)))
		}
	}
	fl.core.event(ctx, r, "workflow", fmt.Sprintf("setup done (%d command(s))", len(wf.Setup)))
	return nil
}

// workflowSecrets resolves the env files' secrets and returns a redactor that knows them and every other secret
// of the run (the agent's, the GitHub token).
func (fl *repoFlow) workflowSecrets(ctx context.Context, r *store.Run, wf config.RepoWorkflow) (*secrets.Redactor, map[string]string, error) {
	red := secrets.NewMaskingRedactor("[redacted]")
	red.Add(fl.memory.secretValues(ctx, r)...)
	var vals map[string]string
	if names := wf.SecretNames(); len(names) > 0 {
		var err error
		if vals, err = fl.secrets.ResolveAll(ctx, names); err != nil {
			return nil, nil, Terminal(fmt.Errorf("the repository's workflow: env files: %w", err))
		}
		for _, v := range vals {
			red.Add(v)
		}
	}
	return red, vals, nil
}

// writeEnvFiles writes each env file (mode 0600) and keeps it out of git.
func writeEnvFiles(ctx context.Context, ws *workspace.Workspace, files []config.EnvFile, vals map[string]string) error {
	var patterns []string
	for _, f := range files {
		// A tracked file would be committed with its secrets: the repository must not track it.
		tracked, err := ws.Tracked(ctx, f.Path)
		if err != nil {
			return fmt.Errorf("env file %s: %w", f.Path, err)
		}
		if tracked {
			return Terminalf("the repository's workflow: env file %s: the repository tracks it (it would be committed with its secrets)", f.Path)
		}
		var b strings.Builder
		for _, n := range f.Secrets {
			fmt.Fprintf(&b, "%s=%s\n", n, vals[n])
		}
		// Beneath the working copy alone: the secrets go nowhere a link the agent left would send them.
		wc := untrusted.New(ws.Dir)
		if err := wc.MkdirAll(path.Dir(path.Clean(f.Path)), 0o755); err != nil {
			return fmt.Errorf("env file %s: %w", f.Path, err)
		}
		if err := wc.WriteFile(f.Path, []byte(b.String()), 0o600); err != nil {
			return fmt.Errorf("env file %s: %w", f.Path, err)
		}
		patterns = append(patterns, "/"+strings.TrimPrefix(filepath.ToSlash(filepath.Clean(f.Path)), "/"))
	}
	if err := ws.Exclude(ctx, patterns...); err != nil {
		return fmt.Errorf("keep the env files out of git: %w", err)
	}
	return nil
}

// commandEnv is the environment of setup and verify: ace's own without any variable holding a secret, the
// repository's dependency caches, the workflow's env.
func (fl *repoFlow) commandEnv(r *store.Run, m repoMirror, wf config.RepoWorkflow, red *secrets.Redactor) ([]string, error) {
	var env []string
	for _, kv := range os.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		if red.Redact(v) != v || slices.Contains(fl.cfg.SecretEnv(), k) {
			continue
		}
		env = append(env, kv)
	}
	caches, err := m.DepCacheEnv(r.Repo)
	if err != nil {
		return nil, err
	}
	env = append(env, caches...)
	env = append(env, "ACE_ISSUE="+fmt.Sprint(r.Issue), "ACE_REPO="+r.Repo, "CI=1")
	for k, v := range wf.Env {
		env = append(env, k+"="+v)
	}
	return env, nil
}

// runCommand runs argv (no shell) in the working copy with its own process group, ended whole when ctx ends. Its
// output, secrets masked, is appended to the run's workflow log and returned (the last outputLimit bytes).
func (fl *repoFlow) runCommand(ctx context.Context, r *store.Run, what string, argv []string, env []string, red *secrets.Redactor) (string, error) {
	buf := &tailBuffer{limit: outputLimit}
	shown := argv
	argv, env, err := fl.boxed(ctx, r, argv, env)
	if err != nil {
		return "", err
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.Workdir, env, buf, buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	start := fl.now()
	err = cmd.Run()
	out := red.Redact(buf.String())
	status := "ok"
	if err != nil {
		status = red.Redact(err.Error())
	}
	fl.appendWorkflowLog(r, fmt.Sprintf("== %s %s: `%s` in %s: %s\n%s\n", start.UTC().Format(time.RFC3339), what,
		config.Command(shown), time.Since(start).Round(time.Millisecond), status, out))
	if err != nil {
		return out, errors.New(status)
	}
	return out, nil
}

// boxed puts a setup or verify command in the run's box where its agent is boxed: it runs the repository's code,
// which the agent wrote as much as anything (a test it added runs in verify), so it gets no more than the agent
// has — the working copy and the dependency caches read-write, the network through the run's proxy.
func (fl *repoFlow) boxed(ctx context.Context, r *store.Run, argv, env []string) ([]string, []string, error) {
	prof, err := fl.agent.profile(r)
	if err != nil {
		return nil, nil, err
	}
	p, err := fl.box.Plan(ctx, r, prof)
	if err != nil || p == nil {
		return argv, env, err
	}
	if err := os.MkdirAll(p.Home, 0o700); err != nil { // setup runs before the agent's home is made
		return nil, nil, fmt.Errorf("the run's home: %w", err)
	}
	own := map[string]string{}
	var rw []string
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if k == "HOME" || k == "TMPDIR" {
			continue // the box's own
		}
		own[k] = v
		if fi, err := os.Stat(v); err == nil && fi.IsDir() && strings.HasPrefix(v, fl.root+string(filepath.Separator)) {
			rw = append(rw, v) // a dependency cache of the repository's, under ace's root
		}
	}
	b, err := fl.box.Wrap(ctx, r, prof, p, runbox.Launch{Argv: argv, Env: own, ReadWrite: rw})
	if err != nil {
		return nil, nil, err
	}
	return b.Argv, b.Environ(), nil
}

// workflowLog is the run's log of setup and verify output, next to its transcript.
func (fl *repoFlow) workflowLog(r *store.Run) string {
	return filepath.Join(fl.root, "logs", tmuxops.SessionName(r.Repo, r.Issue)+attemptSuffix(r)+".workflow.log")
}

func (fl *repoFlow) appendWorkflowLog(r *store.Run, text string) {
	p := fl.workflowLog(r)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		fl.log.Warn("workflow log", "path", p, "err", err)
		return
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		fl.log.Warn("workflow log", "path", p, "err", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		fl.log.Warn("workflow log", "path", p, "err", err)
	}
}

// tailBuffer keeps the last limit bytes written to it.
type tailBuffer struct {
	limit int
	b     []byte
	cut   bool
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if over := len(t.b) - t.limit; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
		t.cut = true
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	if t.cut {
		return "[… earlier output cut by ace]\n" + string(t.b)
	}
	return string(t.b)
}

// repoflowSection is the workflow's template rendered over the issue, for ACE_TASK.md ("" when there is none).
func (fl *repoFlow) repoflowSection(ctx context.Context, r *store.Run, iss *tracker.Issue) (string, error) {
	wf, err := fl.repoWorkflow(ctx, r)
	if err != nil || wf.Template == "" {
		return "", err
	}
	tmpl, err := config.ParseTemplate(wf.Template)
	if err != nil {
		return "", Terminal(workflowErr(err))
	}
	var b strings.Builder
	data := struct {
		Title, Body, Repo, URL string
		Number                 int
	}{Title: sanitize.Line(iss.Title), Body: sanitize.Text(iss.Body), Repo: r.Repo, URL: sanitize.Line(iss.URL), Number: r.Issue}
	if err := tmpl.Execute(&b, data); err != nil {
		return "", Terminal(workflowErr(fmt.Errorf("%s: template: %w", config.WorkflowFile, err)))
	}
	return "## The repository's instructions\n\n" + strings.TrimSpace(sanitize.Text(b.String())) + "\n", nil
}

func cloneWorkflowState(s *store.WorkflowState) *store.WorkflowState {
	if s == nil {
		return &store.WorkflowState{}
	}
	c := *s
	return &c
}
