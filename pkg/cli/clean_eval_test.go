package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/headless"
)

// TestCleanRemovesWhatAnInterruptedEvalLeft: an ace eval run killed mid-run leaves, in its directory beside its
// results, its items' cut bases and working copies, its engine's root (with a headless agent still running), its
// dependency caches (read-only, as Go's module cache is) and an agent session on the eval engines' tmux socket.
// ace clean -n names them and removes nothing; ace clean ends the agent and removes them all, keeping plan.json
// and results/; the directory of an eval run that is running (its lock held), outside ace's root, is left alone,
// and so is the socket but for the sessions started in the killed eval's directory, until that run is over.
func TestCleanRemovesWhatAnInterruptedEvalLeft(t *testing.T) {
	t.Parallel()
	cfg, _ := cleanConfig(t)
	root, ctx := cfg.Workspace.Root, context.Background()
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	killed := filepath.Join(root, "eval", "acme", "calc", "run")
	results := []string{filepath.Join(killed, "plan.json"), filepath.Join(killed, "results", "1.json")}
	for _, p := range results {
		write(p, "{}\n")
	}
	left := []string{filepath.Join(killed, "items"), filepath.Join(killed, "ace"), filepath.Join(killed, "cache")}
	write(filepath.Join(killed, "items", "2", "base.git", "HEAD"), "ref: refs/heads/main\n")
	write(filepath.Join(killed, "items", "2", "ace", "worktrees", "acme", "calc", "2", "lib.sh"), "work\n")
	write(filepath.Join(killed, "ace", "ace.db"), "")
	write(filepath.Join(killed, "cache", "gomod", "m@v1", "go.mod"), "module m\n")
	if err := os.Chmod(filepath.Join(killed, "cache", "gomod", "m@v1"), 0o555); err != nil {
		t.Fatal(err)
	}
	// The headless agent the killed eval left running: a process group of its own, as the supervisor's.
	agent := exec.Command("sleep", "300")
	agent.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := agent.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() { _ = agent.Wait(); close(ended) }()
	t.Cleanup(func() { _ = agent.Process.Kill() })
	status, _ := json.Marshal(headless.Status{SupervisorPID: agent.Process.Pid, SupervisorStart: headless.ProcOf(agent.Process.Pid).Start})
	write(filepath.Join(killed, "ace", "run", "headless", "acme-calc-2.status.json"), string(status))

	// The running eval's directory is outside ace's root (--dir), registered there as ace eval run does.
	running := filepath.Join(t.TempDir(), "other-eval")
	if err := eval.Register(root, running); err != nil {
		t.Fatal(err)
	}
	write(filepath.Join(running, "items", "1", "base.git", "HEAD"), "ref: refs/heads/main\n")
	unlock, err := eval.Lock(running)
	if err != nil {
		t.Fatal(err)
	}
	socket := cfg.Tmux.Socket + "-eval"
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", socket, "kill-server").Run() })
	if out, err := exec.Command("tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "ace-acme-calc-2", "sleep 300").CombinedOutput(); err != nil {
		t.Fatalf("tmux: %v\n%s", err, out)
	}
	// The killed eval's live runner: its host in a session started in the item's working copy, with its agent in
	// a session of its own (setsid), as the live host starts the CLI; and a session of the running eval's.
	liveCopy := filepath.Join(killed, "items", "3", "ace", "worktrees", "acme", "calc", "3")
	otherCopy := filepath.Join(running, "items", "1", "ace", "worktrees", "acme", "other", "1")
	for _, d := range []string{liveCopy, otherCopy} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	agentPID := filepath.Join(t.TempDir(), "agent.pid")
	for _, s := range []struct{ name, dir, cmd string }{
		{"ace-acme-calc-3", liveCopy, "setsid sleep 300 & echo $! > " + agentPID + "; wait"},
		{"ace-acme-other-1", otherCopy, "sleep 300"},
	} {
		if out, err := exec.Command("tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", s.name, "-c", s.dir, s.cmd).CombinedOutput(); err != nil {
			t.Fatalf("tmux: %v\n%s", err, out)
		}
	}
	var livePID int
	testkit.WaitFor(t, "the live host's agent", 10*time.Second, func() bool {
		b, _ := os.ReadFile(agentPID)
		livePID, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return livePID > 0
	})
	t.Cleanup(func() { _ = syscall.Kill(livePID, syscall.SIGKILL) })
	sessions := func() string {
		out, _ := exec.Command("tmux", "-L", socket, "list-sessions", "-F", "#{session_name}").Output()
		return string(out)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	var out bytes.Buffer
	app := &App{Config: cfg, Stdout: &out, Stderr: &out}
	if err := runClean(ctx, app, cleanOptions{DryRun: true}); err != nil {
		t.Fatalf("ace clean -n: %v\n%s", err, out.String())
	}
	for _, p := range left {
		if !strings.Contains(out.String(), "would remove "+p+" (left by an ace eval run") || !exists(p) {
			t.Errorf("ace clean -n, %s:\n%s", p, out.String())
		}
	}
	if strings.Contains(out.String(), running) {
		t.Errorf("ace clean -n names the directory of a running eval:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "would remove tmux session ace-acme-calc-3 on socket "+socket+" (of the ace eval run in "+killed) ||
		!strings.Contains(sessions(), "ace-acme-calc-3") {
		t.Errorf("ace clean -n, the killed eval's live host:\n%s", out.String())
	}

	out.Reset()
	if err := runClean(ctx, app, cleanOptions{}); err != nil {
		t.Fatalf("ace clean: %v\n%s", err, out.String())
	}
	t.Logf("ace clean, one eval running:\n%s", out.String())
	for _, p := range left {
		if exists(p) || !strings.Contains(out.String(), "removed "+p+" ") {
			t.Errorf("%s is left", p)
		}
	}
	for _, p := range results {
		if !exists(p) {
			t.Errorf("ace clean removed the result %s", p)
		}
	}
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Error("the killed eval's headless agent still runs")
	}
	if !exists(filepath.Join(running, "items")) || !strings.Contains(sessions(), "ace-acme-calc-2") || !strings.Contains(sessions(), "ace-acme-other-1") {
		t.Errorf("ace clean touched a running eval: items there %v, sessions %q", exists(filepath.Join(running, "items")), sessions())
	}
	// The killed eval's live host and its agent are ended although another eval runs on the socket.
	if strings.Contains(sessions(), "ace-acme-calc-3") || !strings.Contains(out.String(), "removed tmux session ace-acme-calc-3 on socket "+socket) {
		t.Errorf("ace clean left the killed eval's live host session:\n%s\nsessions %q", out.String(), sessions())
	}
	testkit.WaitFor(t, "the live host's agent ended", 10*time.Second, func() bool { return syscall.Kill(livePID, 0) != nil })

	unlock()
	out.Reset()
	if err := runClean(ctx, app, cleanOptions{}); err != nil {
		t.Fatalf("ace clean: %v\n%s", err, out.String())
	}
	if exists(filepath.Join(running, "items")) || strings.Contains(sessions(), "ace-acme-calc-2") || strings.Contains(sessions(), "ace-acme-other-1") ||
		!strings.Contains(out.String(), "removed tmux session ace-acme-calc-2 on socket "+socket) {
		t.Errorf("once the eval is over, ace clean left its items or its session:\n%s", out.String())
	}
}
