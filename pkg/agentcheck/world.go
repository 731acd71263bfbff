package agentcheck

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/modelserver"
)

// The throwaway repository and its issue.
const (
	repoName  = "ace-check/widgets"
	issue     = 1
	issueBody = "Please add GREETING.md saying \"Good day.\" and commit it.\nKeep $HOME and `backticks` literal.\n"
)

// issueLine is a line of the issue the model must see byte-exact through the CLI's file tool.
const issueLine = "Keep $HOME and `backticks` literal."

// worktree is where ace makes the run's working copy under root (workspace's layout).
func worktree(root string) string {
	owner, name, _ := strings.Cut(repoName, "/")
	return filepath.Join(root, "worktrees", owner, name, strconv.Itoa(issue))
}

// world is one phase's throwaway setting under dir: a bare remote with one commit, a local tracker with one
// labelled issue, a fresh HOME for the CLI, and ace's root.
type world struct {
	dir, home, remote, tracker, root, screens string
}

func newWorld(ctx context.Context, dir string) (*world, error) {
	w := &world{dir: dir, home: filepath.Join(dir, "home"), remote: filepath.Join(dir, "remote.git"),
		tracker: filepath.Join(dir, "tracker"), root: filepath.Join(dir, "root"), screens: filepath.Join(dir, "screens")}
	for _, d := range []string{w.home, filepath.Join(w.home, ".tmp"), filepath.Join(dir, "seed"), filepath.Join(w.tracker, "issues"), w.root, w.screens} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if err := git(ctx, dir, "init", "-q", "--bare", "-b", "main", w.remote); err != nil {
		return nil, err
	}
	seed := filepath.Join(dir, "seed")
	if err := os.WriteFile(filepath.Join(seed, "README.md"), []byte("# widgets\n"), 0o644); err != nil {
		return nil, err
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"}, {"add", "-A"},
		{"-c", "user.name=ace check", "-c", "user.email=check@ace.invalid", "commit", "-q", "-m", "Initial commit"},
		{"push", "-q", w.remote, "main"},
	} {
		if err := git(ctx, seed, args...); err != nil {
			return nil, err
		}
	}
	repoTOML := fmt.Sprintf("name = %q\nremote = %q\ndefault_branch = \"main\"\n", repoName, w.remote)
	if err := os.WriteFile(filepath.Join(w.tracker, "repo.toml"), []byte(repoTOML), 0o644); err != nil {
		return nil, err
	}
	body := fmt.Sprintf("+++\ntitle = \"Add a greeting\"\nlabels = [\"ace\"]\nstate = \"open\"\nauthor = \"you\"\nlabeled_by = \"you\"\n+++\n%s", issueBody)
	if err := os.WriteFile(filepath.Join(w.tracker, "issues", strconv.Itoa(issue)+".md"), []byte(body), 0o644); err != nil {
		return nil, err
	}
	return w, nil
}

// enterHome makes this process's environment a fresh user's of cli talking to the model server at baseURL:
// HOME is the world's, the user's own credentials and provider variables are gone (the CLI must reach this
// server only, with the server's key), and the files the CLI needs are written. The process runs this one
// check: ace, its tmux server and the CLI see what a new user's shell would give.
func (w *world) enterHome(cli, baseURL string, subscriber bool) (modelserver.Client, error) {
	client, err := modelserver.ClientFor(cli, baseURL, subscriber)
	if err != nil {
		return client, err
	}
	for _, k := range modelserver.ProviderVariables {
		if err := os.Unsetenv(k); err != nil {
			return client, err
		}
	}
	env := append([]string{"HOME=" + w.home, "TMPDIR=" + filepath.Join(w.home, ".tmp"), "CI="}, client.Env...)
	if os.Getenv("LANG") == "" {
		env = append(env, "LANG=C.UTF-8")
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			return client, err
		}
	}
	for rel, content := range client.Files {
		p := filepath.Join(w.home, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return client, err
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			return client, err
		}
	}
	return client, nil
}

// config is ace's configuration for the check: the user's own settings of agent name (its command, model,
// home, markers, sandbox: what their runs use), run on runner (tmux, or live) with auto_approve on, against the world's tracker and
// root; a boxed agent reaches the model server at modelURL through a forwarded port. Secrets the user configured
// are left out: the CLI signs in with the model server's key.
func (w *world) config(user *config.Config, name, runner string, startup time.Duration, modelURL string) (*config.Config, error) {
	cfg := config.Default()
	a, _ := user.AgentConfigFor(name)
	a.Runner, a.AutoApprove, a.Secrets = runner, true, nil
	a.Headless, a.HeadlessResume = "", ""
	cfg.Agents = map[string]config.AgentConfig{name: a}
	cfg.Agent.Default = name
	cfg.Prices = user.Prices
	cfg.Workspace.Root = w.root
	cfg.Tracker = config.TrackerConfig{Kind: "local", Path: w.tracker}
	// Not the PID: each phase runs as PID 2 or so of its own PID namespace, and tmux's socket directory is shared.
	cfg.Tmux.Socket = "ace-check-" + filepath.Base(w.dir) + "-" + rand.Text()[:8]
	cfg.Tmux.StartupTimeout = config.D(startup)
	cfg.Monitor.Interval = config.D(250 * time.Millisecond)
	cfg.Monitor.IdleAfter = config.D(2 * time.Minute) // the script never idles: a nudge would be a failure
	cfg.Monitor.Timeout = config.D(3 * time.Minute)
	// A CLI stuck at a screen ace does not know, or working for ever without a sign of work, reaches the issue
	// (and fails the step with its screen) well within the phase; the script never keeps a CLI waiting that long.
	cfg.Monitor.StuckAfter = config.D(30 * time.Second)
	// The scripted model picks its turn by the length of the conversation: a compaction would replay it.
	cfg.Monitor.CompactThreshold = 64 << 20
	cfg.PR.Follow = false
	cfg.PR.Draft = false
	cfg.Sandbox = user.Sandbox
	if u, err := url.Parse(modelURL); err == nil {
		if port, err := strconv.Atoi(u.Port()); err == nil {
			cfg.Sandbox.Forward = append(slices.Clone(cfg.Sandbox.Forward), port)
		}
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("the check's configuration for agent %s: %w", name, err)
	}
	return cfg, nil
}

func git(ctx context.Context, dir string, args ...string) error {
	_, err := gitOut(ctx, dir, args...)
	return err
}

func gitOut(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return string(out), nil
}
