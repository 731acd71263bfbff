package e2e_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/memory"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// memoryScript is a well-behaved agent that also leaves a note for later runs in its copy of AGENTS.md.
const memoryScript = `busy 200ms
sh echo "- learned on issue $ACE_ISSUE: greetings live in GREETING.md" >> .ace/memory/AGENTS.md
write GREETING.md Hello from the fake agent!\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
done Added GREETING.md with a greeting.
`

// withContextFile makes the fake agent read CLAUDE.md, as claude does.
func withContextFile(c *config.Config) {
	a := c.Agents["fake"]
	a.ContextFile = "CLAUDE.md"
	c.Agents["fake"] = a
}

// runIssue drives issue n of the test repository until it settles.
func (w *world) runIssue(n int) *store.Run {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r, err := w.svc.Engine.Open(ctx, workflow.Request{Repo: testRepo, Issue: n, NewAttempt: true})
	if err != nil {
		w.t.Fatal(err)
	}
	if err := w.svc.Engine.Follow(ctx, r, workflow.UntilSettled); err != nil {
		w.t.Fatalf("drive #%d: %v (run at %s, %s)", n, err, r.Step, r.Error)
	}
	return r
}

func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMemoryCarriesOverToTheNextRun(t *testing.T) {
	t.Parallel()
	w := newWorld(t, memoryScript, withContextFile)
	first := w.run(workflow.UntilSettled)
	if first.Status != store.StatusDone {
		t.Fatalf("first run ended %s at %s: %s", first.Status, first.Step, first.Error)
	}
	w.gh.AddIssue(testRepo, fakegithub.IssueOptions{Number: 194, Title: "Add a farewell", Body: "Please add FAREWELL.md.", Author: "alice"})
	w.gh.Label(testRepo, 194, "ace", "alice")
	second := w.runIssue(194)
	if second.Status != store.StatusDone {
		t.Fatalf("second run ended %s at %s: %s", second.Status, second.Step, second.Error)
	}
	if second.Workdir == first.Workdir {
		t.Fatal("both runs used one working copy")
	}

	// The second working copy started with the first run's status line and the first agent's note.
	status := readText(t, filepath.Join(second.Workdir, memory.StatusCopy))
	if !strings.Contains(status, "· #193 · fake · done · "+first.PRURL+"\n") {
		t.Errorf("the second working copy's status.md lacks the first run:\n%s", status)
	}
	if strings.Contains(status, "#194") {
		t.Errorf("status.md copied in already names the run itself:\n%s", status)
	}
	agentsMD := readText(t, filepath.Join(second.Workdir, memory.AgentsCopy))
	if !strings.Contains(agentsMD, "- learned on issue 193: greetings live in GREETING.md\n") {
		t.Errorf("the second working copy's AGENTS.md lacks the first agent's note:\n%s", agentsMD)
	}
	task := readText(t, filepath.Join(second.Workdir, "ACE_TASK.md"))
	for _, want := range []string{memory.StatusCopy, memory.AgentsCopy, "append it to"} {
		if !strings.Contains(task, want) {
			t.Errorf("ACE_TASK.md does not mention %q", want)
		}
	}

	// The agent's context file points at the memory, and git sees none of it.
	pointer := readText(t, filepath.Join(second.Workdir, "CLAUDE.md"))
	if !strings.Contains(pointer, "@"+memory.AgentsCopy) || !strings.Contains(pointer, memory.StatusCopy) {
		t.Errorf("CLAUDE.md does not point at the memory:\n%s", pointer)
	}
	if st := gittest.Run(t, second.Workdir, "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status of the working copy is not clean:\n%s", st)
	}
	for _, r := range []*store.Run{first, second} {
		files := strings.Fields(gittest.Run(t, w.remote, "ls-tree", "-r", "--name-only", r.Branch))
		if !slices.Equal(files, []string{"GREETING.md", "README.md"}) {
			t.Errorf("branch %s pushed %v, want only the agent's work", r.Branch, files)
		}
	}

	// The repository memory has both runs and both notes, each once.
	mem, err := memory.New(w.cfg.Workspace.Root, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f, err := mem.Read(context.Background(), testRepo)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(f.Status), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "#193") || !strings.Contains(lines[1], "#194 · fake · done · "+second.PRURL) {
		t.Errorf("status.md:\n%s", f.Status)
	}
	for _, n := range []string{"193", "194"} {
		if c := strings.Count(f.Agents, "- learned on issue "+n+":"); c != 1 {
			t.Errorf("the note of issue %s is %d times in AGENTS.md:\n%s", n, c, f.Agents)
		}
	}
}

func TestFailedRunIsRecordedInMemory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "sh echo '- gotcha: nothing to do here' >> .ace/memory/AGENTS.md\ndone Nothing to do.\n", nil)
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusFailed {
		t.Fatalf("run ended %s: %s", r.Status, r.Error)
	}
	mem, _ := memory.New(w.cfg.Workspace.Root, memory.Options{})
	f, err := mem.Read(context.Background(), testRepo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Status, "· #193 · fake · failed · the agent made no changes\n") {
		t.Errorf("status.md:\n%s", f.Status)
	}
	if !strings.Contains(f.Agents, "- gotcha: nothing to do here\n") {
		t.Errorf("AGENTS.md lacks what the failed run's agent added:\n%s", f.Agents)
	}
}

func TestTrackedContextFileIsLeftAlone(t *testing.T) {
	t.Parallel()
	w := newWorld(t, workScript, withContextFile)
	// The repository tracks its own CLAUDE.md.
	const own = "# Widgets\n\nUse tabs. Run `make check`.\n"
	seed := t.TempDir()
	gittest.Run(t, seed, "clone", "-q", w.remote, "repo")
	repo := filepath.Join(seed, "repo")
	if err := os.WriteFile(filepath.Join(repo, "CLAUDE.md"), []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, repo, "add", "CLAUDE.md")
	gittest.Run(t, repo, "commit", "-q", "-m", "Add CLAUDE.md")
	gittest.Run(t, repo, "push", "-q", "origin", "main")

	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	if got := readText(t, filepath.Join(r.Workdir, "CLAUDE.md")); got != own {
		t.Errorf("the tracked CLAUDE.md was changed:\n%s", got)
	}
	if st := gittest.Run(t, r.Workdir, "status", "--porcelain", "--", "CLAUDE.md"); st != "" {
		t.Errorf("git status of CLAUDE.md: %q", st)
	}
	if exec.Command("git", "-C", r.Workdir, "check-ignore", "-q", "--no-index", "CLAUDE.md").Run() == nil {
		t.Error("CLAUDE.md is excluded from git")
	}
	if got := gittest.Run(t, w.remote, "show", r.Branch+":CLAUDE.md"); got != strings.TrimSpace(own) {
		t.Errorf("pushed CLAUDE.md = %q", got)
	}
	if changed := gittest.Run(t, r.Workdir, "diff", "--name-only", "origin/main", "HEAD"); changed != "GREETING.md" {
		t.Errorf("the branch changes %q, want only GREETING.md", changed)
	}
	if task := readText(t, filepath.Join(r.Workdir, "ACE_TASK.md")); !strings.Contains(task, memory.AgentsCopy) {
		t.Error("ACE_TASK.md does not point at the memory")
	}
}

func TestAgentReplacingThePointerGetsItCommitted(t *testing.T) {
	t.Parallel()
	script := `busy 200ms
write CLAUDE.md # Widgets\n\nRun make check before you commit.\n
done Wrote CLAUDE.md.
`
	w := newWorld(t, script, withContextFile)
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	if got := gittest.Run(t, w.remote, "show", r.Branch+":CLAUDE.md"); !strings.Contains(got, "Run make check") {
		t.Errorf("pushed CLAUDE.md = %q, want the agent's", got)
	}
}

func TestCancelledRunIsRecordedInMemory(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "hang\n", nil)
	if r := w.run(workflow.UntilMonitoring); r.Status != store.StatusActive {
		t.Fatalf("run %s before closing", r.Status)
	}
	w.gh.Close(testRepo, testIssue)
	if r := w.run(workflow.UntilSettled); r.Status != store.StatusCancelled {
		t.Fatalf("run ended %s (%s), want cancelled", r.Status, r.Error)
	}
	mem, _ := memory.New(w.cfg.Workspace.Root, memory.Options{})
	f, err := mem.Read(context.Background(), testRepo)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Status, "· #193 · fake · cancelled · the issue was closed\n") || strings.Count(f.Status, "\n") != 1 {
		t.Errorf("status.md:\n%s", f.Status)
	}
}

func TestMemoryDisabled(t *testing.T) {
	t.Parallel()
	w := newWorld(t, "done Nothing to do.\n", func(c *config.Config) {
		c.Memory.Enabled = false
		withContextFile(c)
	})
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusFailed {
		t.Fatalf("run ended %s: %s", r.Status, r.Error)
	}
	for _, p := range []string{filepath.Join(r.Workdir, memory.CopyDir), filepath.Join(r.Workdir, "CLAUDE.md"),
		filepath.Join(w.cfg.Workspace.Root, "memory")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s exists with memory disabled", p)
		}
	}
	if task := readText(t, filepath.Join(r.Workdir, "ACE_TASK.md")); strings.Contains(task, "memory") {
		t.Error("ACE_TASK.md mentions the memory with memory disabled")
	}
}

// TestMemoryWithholdsSecrets: a note of the agent's that holds one of its secrets (or the GitHub token) never
// reaches the repository memory that every later agent reads; its other notes do.
func TestMemoryWithholdsSecrets(t *testing.T) {
	t.Parallel()
	script := `sh echo "- tests need FAKE_AGENT_KEY=$FAKE_AGENT_KEY exported" >> .ace/memory/AGENTS.md
sh echo "- push with token ` + botToken + `" >> .ace/memory/AGENTS.md
sh echo "- run go vet before committing" >> .ace/memory/AGENTS.md
` + workScript
	w := newWorld(t, script, nil)
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s: %s", r.Status, r.Error)
	}
	mem, err := memory.New(w.cfg.Workspace.Root, memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	path, err := mem.AgentsPath(testRepo)
	if err != nil {
		t.Fatal(err)
	}
	got := readText(t, path)
	if strings.Contains(got, fakeSecret) || strings.Contains(got, botToken) || !strings.Contains(got, "run go vet before committing") {
		t.Fatalf("repository AGENTS.md:\n%s", got)
	}
	if log := w.eventLog(r); !strings.Contains(log, "withheld 2 line(s)") {
		t.Errorf("no event says lines were withheld:\n%s", log)
	}
}
