package e2e_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/internal/testkit/acetest"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/secrets"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// realWorld is ace driving a real agent CLI against the scripted model server, inside the test's own
// loopback-only namespace (realcli.Enter): fake GitHub, a smart-HTTP git remote, ace's tmux server on its own
// socket, and a fresh HOME holding only what a user of that CLI has.
type realWorld struct {
	t      *testing.T
	cli    string
	pinned realcli.CLI
	srv    *modelserver.Server
	gh     *fakegithub.Server
	remote string
	cfg    *config.Config
	svc    *service.Service
}

// newRealWorld builds the world for cli. aceTOML is the user's ace.toml (the agent's name and, at most, its
// runner and auto_approve); turns is the model's script, relative paths in the working copy ace will make; tune
// changes the configuration last (the follow-through case turns pr.follow on).
// The process environment becomes the fresh HOME's: this process runs this one test only (realcli.Enter
// re-executed it in its namespace), so ace, its tmux server and the CLI see what a user's shell would give.
func newRealWorld(t *testing.T, c realcli.CLI, aceTOML, body string, turns []modelserver.Turn, tune ...func(*config.Config)) *realWorld {
	t.Helper()
	w := openRealWorld(t, c, aceTOML, body, turns, tune...)
	if err := w.svc.StartQueue(context.Background()); err != nil {
		t.Fatalf("start the job queue: %v", err)
	}
	return w
}

// openRealWorld is newRealWorld whose ace in the test process does not work the queue: a test that runs ace as
// a process of its own reads the store through it.
func openRealWorld(t *testing.T, c realcli.CLI, aceTOML, body string, turns []modelserver.Turn, tune ...func(*config.Config)) *realWorld {
	t.Helper()
	return openRealWorldOn(t, c, aceTOML, body, modelserver.Scenario{Turns: turns}, tune...)
}

// openRealWorldOn is openRealWorld with the model server playing sc (a gateway, say); its Dir and Final are set.
func openRealWorldOn(t *testing.T, c realcli.CLI, aceTOML, body string, sc modelserver.Scenario, tune ...func(*config.Config)) *realWorld {
	t.Helper()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	cli := c.Name
	w := &realWorld{t: t, cli: cli, pinned: c}
	sc.Dir, sc.Final = filepath.Join(root, "worktrees", "acme", "widgets", fmt.Sprint(testIssue)), "All done."
	w.srv = modelserver.Start(t, sc)
	home := realcli.NewHome(t, c, w.srv.URL())
	for _, kv := range append(home.Env, "GITHUB_TOKEN="+botToken, "CI=") {
		k, v, _ := strings.Cut(kv, "=")
		if err := os.Setenv(k, v); err != nil {
			t.Fatal(err)
		}
	}

	forge := acetest.NewForge(t, dir, body)
	w.gh, w.remote = forge.GH, forge.Remote

	cfg, err := config.Parse("ace.toml", []byte(aceTOML))
	if err != nil {
		t.Fatalf("ace.toml: %v", err)
	}
	cfg.Workspace.Root = root
	cfg.PR.Follow = false // these cases end when the pull request opens (follow-through has its own test)
	forge.Configure(cfg)
	cfg.Tmux.Socket = "ace-real-" + acetest.RandomHex(4)
	cfg.Tmux.StartupTimeout = config.Duration{Duration: 60 * time.Second}
	cfg.Monitor.Interval = config.Duration{Duration: 250 * time.Millisecond}
	cfg.Monitor.IdleAfter = config.Duration{Duration: 2 * time.Minute} // the script never idles: a nudge is a bug
	cfg.Monitor.Timeout = config.Duration{Duration: 3 * time.Minute}
	// A CLI that stalls (gemini 0.61 at "Thinking..." after its model had answered) goes to a human well within a
	// case's 2–3 minute drive, and its report says which signs stayed flat, rather than a bare deadline.
	cfg.Monitor.StuckAfter = config.Duration{Duration: 90 * time.Second}
	cfg.Monitor.ExecIdleTimeout = config.Duration{Duration: 90 * time.Second}
	cfg.Monitor.ExecTurnTimeout = config.Duration{Duration: 3 * time.Minute}
	cfg.Poll.Interval = config.Duration{Duration: 250 * time.Millisecond}
	// A scripted model picks its turn by the length of the conversation: a compaction would replay the script
	// (a gemini transcript passed monitor.compact_threshold under load and its question was asked again).
	// Compaction has its own tests.
	cfg.Monitor.CompactThreshold = 64 << 20
	// The model server listens on this namespace's loopback, as a user's gateway on their machine: the CLI is
	// pointed at it as users do (claude's and gemini's environment, codex's own config.toml in the HOME), and
	// nothing in ace's configuration forwards it into the box (issue #37: ace does, what it allows the agent reaches).

	for _, f := range tune {
		f(cfg)
	}
	if os.Getenv("ACE_REALCLI_SCREENS") != "" && cli == "gemini" {
		// gemini's debug log in the run's home (writable in its box), shown by report: its requests, retries and
		// errors, which its screen never shows.
		a := cfg.Agents[cli]
		a.Env = map[string]string{"GEMINI_DEBUG_LOG_FILE": filepath.Join(root, "boxes", "1", "homes", cli, "debug.log")}
		cfg.Agents[cli] = a
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	w.cfg = cfg

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Whatever the CLI left running (codex's app-server daemon, gemini's node) ends with the namespace.
	w.svc = acetest.Open(t, service.Options{
		Config:     cfg,
		Secrets:    secrets.NewResolver(secrets.Options{LookupEnv: os.LookupEnv}),
		Logger:     slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Executable: exe,
		Tune:       func(o *workflow.Options) { o.IssueCheckEvery = time.Second },
	})
	if os.Getenv("ACE_REALCLI_SCREENS") != "" {
		go w.logScreens()
	}
	return w
}

// logScreens logs every new screen of the agent's session (ACE_REALCLI_SCREENS=1), to see what a CLI showed
// when a case goes wrong.
func (w *realWorld) logScreens() {
	last := ""
	for ctx := w.t.Context(); ctx.Err() == nil; time.Sleep(300 * time.Millisecond) {
		screen, err := w.svc.Tmux.Capture(ctx, "ace-widgets-193", 0)
		if err != nil || screen == last {
			continue
		}
		last = screen
		w.t.Logf("screen at %s:\n%s", time.Now().Format("15:04:05.000"), strings.TrimRight(screen, "\n "))
	}
}

// drive follows issue 193's run until stop, within limit.
func (w *realWorld) drive(stop workflow.Until, limit time.Duration) *store.Run {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	r, err := w.svc.Engine.Open(ctx, workflow.Request{Repo: testRepo, Issue: testIssue})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.svc.Engine.Follow(ctx, r, stop); err != nil {
		w.t.Fatalf("drive: %v (run at %s, %s)\n%s", err, r.Step, r.Error, w.report(r))
	}
	return r
}

// report is what a failing case shows: the run's events, the model's requests and the agent's last screen.
func (w *realWorld) report(r *store.Run) string {
	var b strings.Builder
	if evs, err := w.svc.Store.Events(context.Background(), r.ID); err == nil {
		b.WriteString("events:\n")
		for _, e := range evs {
			fmt.Fprintf(&b, "  %s %s: %s\n", e.Time.Format("15:04:05.000"), e.Kind, e.Message)
		}
	}
	b.WriteString("model requests:\n")
	for _, q := range w.srv.Requests() {
		fmt.Fprintf(&b, "  %s %s %s status=%d side=%v turn=%d final=%v tools=%d took=%s\n", q.At.Format("15:04:05.000"), q.Method, q.Path,
			q.Status, q.Side, q.Turn, q.Final, len(q.Tools), q.Took.Round(time.Millisecond))
	}
	fmt.Fprintf(&b, "user texts: %q\ntool outputs: %q\n", w.srv.UserTexts(), w.srv.ToolOutputs())
	if r.Session != "" {
		if screen, err := w.svc.Tmux.Capture(context.Background(), r.Session, 0); err == nil {
			b.WriteString("screen:\n" + screen)
		}
	}
	if r.State.LastScreen != "" {
		b.WriteString("last screen:\n" + r.State.LastScreen)
	}
	if a, ok := w.cfg.Agents[w.cli]; ok && a.Env["GEMINI_DEBUG_LOG_FILE"] != "" {
		if log, err := os.ReadFile(a.Env["GEMINI_DEBUG_LOG_FILE"]); err == nil {
			b.WriteString("\ngemini's debug log:\n" + string(log[max(0, len(log)-20000):]))
		} else {
			b.WriteString("\ngemini's debug log: " + err.Error())
		}
	}
	return b.String()
}

// events are the run's event kinds and messages, one per line.
func (w *realWorld) events(r *store.Run) string {
	w.t.Helper()
	evs, err := w.svc.Store.Events(context.Background(), r.ID)
	if err != nil {
		w.t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range evs {
		fmt.Fprintf(&b, "%s %s: %s\n", e.Time.Format("15:04:05.000"), e.Kind, e.Message)
	}
	return b.String()
}
