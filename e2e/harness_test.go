package e2e_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/internal/testkit/acetest"
	"github.com/aceworks/ace/pkg/cli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/service"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestMain lets the test binary be ace (`<test binary> ace ...`) and play the parts tmux panes run: the
// secret-injecting launcher and the fake agent.
func TestMain(m *testing.M) {
	os.Exit(testkit.Main(m, runWide, cli.Child, testkit.As("ace", cli.Main)))
}

// runWide runs the tests with more of them at once than there are CPUs (testkit.Widen): each spends most of its
// time waiting on agents, tmux and git, not computing.
func runWide(m *testing.M) int {
	testkit.Widen()
	return m.Run()
}

// The forge's repository, issue and tokens.
const (
	testRepo   = acetest.Repo
	testIssue  = acetest.Issue
	botToken   = acetest.BotToken
	humanToken = acetest.HumanToken
)

// world is one hermetic ace installation: fake GitHub, a smart-HTTP git remote, a private tmux server, a store.
type world struct {
	t      *testing.T
	dir    string
	gh     *fakegithub.Server
	git    *gittest.HTTPServer
	remote string // bare repository path
	cfg    *config.Config
	svc    *service.Service
	bin    string
	script string // the fake agent's script
	record string // the prompts the fake agent received
	// dispatch makes this world's ace start runs for labelled issues itself, as `ace poll` does.
	dispatch bool

	mu     sync.Mutex // guards events: the engine reports from its job workers
	events []workflow.Progress
}

// progress is what the engine reported so far.
func (w *world) progress() []workflow.Progress {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.events)
}

// newWorld builds the world with the fake agent running script (one turn per submitted prompt).
func newWorld(t *testing.T, script string, tune func(*config.Config)) *world {
	t.Helper()
	return buildWorld(t, script, tune, false)
}

// newPollingWorld is newWorld whose ace dispatches as `ace poll` does: a pass at start and every poll.interval.
func newPollingWorld(t *testing.T, script string, tune func(*config.Config)) *world {
	t.Helper()
	return buildWorld(t, script, tune, true)
}

func buildWorld(t *testing.T, script string, tune func(*config.Config), dispatch bool) *world {
	t.Helper()
	in := acetest.New(t, script)
	w := &world{t: t, dir: in.Dir, gh: in.GH, git: in.Git, remote: in.Remote, bin: in.Exe, script: in.Script,
		record: in.Record, dispatch: dispatch}
	cfg := in.Cfg
	fake := cfg.Agents["fake"]
	fake.Secrets = []string{"FAKE_AGENT_KEY"}
	cfg.Agents["fake"] = fake
	cfg.Monitor.IdleAfter = config.D(30 * time.Second)
	// The fake agent records its prompts and keeps its place beside the test's files, outside any box; the boxed
	// cases (sandbox_e2e_test.go) box it with what it needs.
	cfg.Sandbox.Mode = config.SandboxOff
	if tune != nil {
		tune(cfg) // the follow-through tests turn pr.follow on
	}
	w.cfg = cfg
	w.open()
	return w
}

func (w *world) recordPath() string { return w.record }

// stopQueue makes this world's ace stop working runs, as if its process had ended between two steps.
func (w *world) stopQueue() {
	w.t.Helper()
	if err := w.svc.Queue.Stop(context.Background()); err != nil {
		w.t.Fatalf("stop the job queue: %v", err)
	}
}

// open (re)assembles ace as a fresh process would: new store handle, tracker client and engine. A previous
// assembly stops working runs first: it is the process that ended.
func (w *world) open() {
	w.t.Helper()
	if w.svc != nil {
		w.stopQueue()
	}
	w.svc = acetest.Open(w.t, service.Options{
		Config: w.cfg,
		Secrets: acetest.Secrets(map[string]string{"GITHUB_TOKEN": botToken, "FAKE_AGENT_KEY": "fake-agent-secret-value-42",
			"ANTHROPIC_API_KEY": "sk-ant-test-not-a-key"}), // the live fallback case signs claude in
		Logger:     slog.New(slog.NewTextHandler(testWriter{w.t}, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Executable: w.bin,
		Dispatch:   w.dispatch,
		Observer: func(p workflow.Progress) {
			w.mu.Lock()
			w.events = append(w.events, p)
			w.mu.Unlock()
		},
		Tune: func(o *workflow.Options) { o.IssueCheckEvery = 100 * time.Millisecond },
	})
	if err := w.svc.StartQueue(context.Background()); err != nil {
		w.t.Fatalf("start the job queue: %v", err)
	}
}

// run drives issue 193 until it settles (done, failed, cancelled or waiting for input).
func (w *world) run(stop workflow.Until) *store.Run {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := w.svc.Engine.Open(ctx, workflow.Request{Repo: testRepo, Issue: testIssue, NewAttempt: true})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.svc.Engine.Follow(ctx, r, stop); err != nil {
		w.t.Fatalf("drive: %v (run at %s, %s)", err, r.Step, r.Error)
	}
	return r
}

// untilEnded follows a run until it has ended (a run waiting for a human is followed on: its answer is coming).
func untilEnded(r *store.Run) bool { return r.Status.Terminal() }

// prompts are the prompts the fake agent received, in order, byte-exact.
func (w *world) prompts() []string {
	w.t.Helper()
	b, err := os.ReadFile(w.recordPath())
	if err != nil && !os.IsNotExist(err) {
		w.t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Prompt string `json:"prompt"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			w.t.Fatalf("record line %q: %v", line, err)
		}
		out = append(out, rec.Prompt)
	}
	return out
}

// statusComments are ace's sticky status comments on the issue.
func (w *world) statusComments() []string {
	var out []string
	for _, c := range w.gh.Comments(testRepo, testIssue) {
		if strings.Contains(c.Body, workflow.StatusMarker) {
			out = append(out, c.Body)
		}
	}
	return out
}

func (w *world) labels() []string { return w.gh.Issue(testRepo, testIssue).Labels }

// sessionAlive reports whether issue 193's tmux session exists.
func (w *world) sessionAlive() bool {
	ok, err := w.svc.Tmux.HasSession(context.Background(), tmuxops.SessionName(testRepo, testIssue))
	if err != nil {
		w.t.Fatal(err)
	}
	return ok
}

type testWriter struct{ t *testing.T }

func (tw testWriter) Write(p []byte) (int, error) {
	tw.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
