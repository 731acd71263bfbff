package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
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
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestCleanRemovesWhatAnInterruptedEvalLeft: an ace eval run killed mid-run leaves, in its directory beside its
// results, its items' cut bases and working copies, its engine's root (with a headless agent still running), its
// dependency caches (read-only, as Go's module cache is) and an agent session on the eval engines' tmux socket.
// ace clean -n names them and removes nothing; ace clean ends the agent and removes them all, keeping plan.json
// and results/; the directory of an eval run that is running (its lock held), outside ace's root, is left alone,
// and so are its sessions, on its own tmux socket, until that run is over — while every session on the killed
// eval's own socket is ended, and on the socket an older ace's evals shared those started in its directory.
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
	// Each eval's engine has a tmux socket of its own, where both have a session of the same name; an older ace's
	// evals shared one, where each eval's sessions are known by the directory they started in.
	own, other, shared := eval.Socket(cfg.Tmux.Socket, killed), eval.Socket(cfg.Tmux.Socket, running), eval.SharedSocket(cfg.Tmux.Socket)
	for _, sock := range []string{own, other, shared} {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_ = tmuxops.New(sock).KillServer(ctx)
		})
	}
	// The killed eval's live runner: its host in a session started in the item's working copy, with its agent in
	// a session of its own (setsid), as the live host starts the CLI; the running eval's sessions; and on the shared
	// socket, a session of each started in its items.
	liveCopy := filepath.Join(killed, "items", "3", "ace", "worktrees", "acme", "calc", "3")
	otherCopy := filepath.Join(running, "items", "1", "ace", "worktrees", "acme", "other", "1")
	for _, d := range []string{liveCopy, otherCopy} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	agentPID := filepath.Join(t.TempDir(), "agent.pid")
	for _, s := range []struct{ socket, name, dir, cmd string }{
		{own, "ace-acme-calc-2", killed, "sleep 300"},
		{own, "ace-acme-calc-3", liveCopy, "setsid sleep 300 & echo $! > " + agentPID + "; wait"},
		{other, "ace-acme-calc-2", otherCopy, "sleep 300"},
		{shared, "ace-acme-calc-4", liveCopy, "sleep 300"},
		{shared, "ace-acme-other-1", otherCopy, "sleep 300"},
	} {
		if out, err := exec.Command("tmux", "-L", s.socket, "-f", "/dev/null", "new-session", "-d", "-s", s.name, "-c", s.dir, s.cmd).CombinedOutput(); err != nil {
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
	sessions := func(socket string) string {
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
	for _, name := range []string{"ace-acme-calc-2", "ace-acme-calc-3"} {
		if !strings.Contains(out.String(), "would remove tmux session "+name+" on socket "+own+" (of the ace eval run in "+killed) ||
			!strings.Contains(sessions(own), name) {
			t.Errorf("ace clean -n, the killed eval's session %s:\n%s", name, out.String())
		}
	}
	if !strings.Contains(out.String(), "would remove tmux session ace-acme-calc-4 on socket "+shared+" (of the ace eval run in "+killed) {
		t.Errorf("ace clean -n, the killed eval's session on the shared socket:\n%s", out.String())
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
	if !exists(filepath.Join(running, "items")) || !strings.Contains(sessions(other), "ace-acme-calc-2") ||
		!strings.Contains(sessions(shared), "ace-acme-other-1") {
		t.Errorf("ace clean touched a running eval: items there %v, sessions %q and %q", exists(filepath.Join(running, "items")),
			sessions(other), sessions(shared))
	}
	// The killed eval's sessions are ended — its live host and its agent too — and so is its socket's server; on
	// the shared socket, its session although another eval runs there.
	if sessions(own) != "" || !strings.Contains(out.String(), "removed tmux session ace-acme-calc-3 on socket "+own) {
		t.Errorf("ace clean left the killed eval's sessions:\n%s\nsessions %q", out.String(), sessions(own))
	}
	if strings.Contains(sessions(shared), "ace-acme-calc-4") || !strings.Contains(out.String(), "removed tmux session ace-acme-calc-4 on socket "+shared) {
		t.Errorf("ace clean left the killed eval's session on the shared socket:\n%s\nsessions %q", out.String(), sessions(shared))
	}
	testkit.WaitFor(t, "the live host's agent ended", 10*time.Second, func() bool { return syscall.Kill(livePID, 0) != nil })

	unlock()
	out.Reset()
	if err := runClean(ctx, app, cleanOptions{}); err != nil {
		t.Fatalf("ace clean: %v\n%s", err, out.String())
	}
	if exists(filepath.Join(running, "items")) || sessions(other) != "" || sessions(shared) != "" ||
		!strings.Contains(out.String(), "removed tmux session ace-acme-calc-2 on socket "+other) {
		t.Errorf("once the eval is over, ace clean left its items or its sessions:\n%s", out.String())
	}
}

// TestCleanRemovesTheSocketsOfAnEvalTooDeep: an eval directory too deep for a socket's path has its engine keep
// its sockets (its boxes' proxies', its live hosts') in a directory of its own under the temporary directory
// (runbox.ShortSocket). An eval run killed mid-run leaves that directory with its sockets in it: ace clean -n names
// it, ace clean removes it; a running eval's, too deep as well, is left alone until that eval is over.
func TestCleanRemovesTheSocketsOfAnEvalTooDeep(t *testing.T) {
	t.Parallel()
	cfg, _ := cleanConfig(t)
	root, ctx := cfg.Workspace.Root, context.Background()
	deep := strings.Repeat("a-repository-with-a-long-name-", 3)
	killed := filepath.Join(root, "eval", "acme", deep, "run")
	running := filepath.Join(t.TempDir(), deep, "eval")
	if err := eval.Register(root, running); err != nil {
		t.Fatal(err)
	}
	// Each eval's engine left a live host's socket, as a killed host leaves it: bound, nobody listening.
	sockets := map[string]string{}
	for _, dir := range []string{killed, running} {
		engine := eval.EngineRoot(dir)
		p, err := runbox.ShortSocket(engine, filepath.Join(engine, "live", "acme-calc-1-run1", "host.sock"), "1-live", "host.sock")
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(p, dir) {
			t.Fatalf("%s is not too deep for a socket: %s", dir, p)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: p, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close()
		if err := os.MkdirAll(filepath.Join(engine, "run"), 0o755); err != nil {
			t.Fatal(err)
		}
		sockets[dir] = filepath.Dir(filepath.Dir(p)) // the engine's own directory there
		t.Cleanup(func() { _ = os.RemoveAll(sockets[dir]) })
	}
	if sockets[killed] == sockets[running] {
		t.Fatalf("two evals share a socket directory: %s", sockets[killed])
	}
	unlock, err := eval.Lock(running)
	if err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }

	var out bytes.Buffer
	app := &App{Config: cfg, Stdout: &out, Stderr: &out}
	if err := runClean(ctx, app, cleanOptions{DryRun: true}); err != nil {
		t.Fatalf("ace clean -n: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "would remove "+sockets[killed]+" (left by an ace eval run") || !exists(sockets[killed]) {
		t.Errorf("ace clean -n, the killed eval's sockets in %s:\n%s", sockets[killed], out.String())
	}
	out.Reset()
	if err := runClean(ctx, app, cleanOptions{}); err != nil {
		t.Fatalf("ace clean: %v\n%s", err, out.String())
	}
	if exists(sockets[killed]) || !strings.Contains(out.String(), "removed "+sockets[killed]+" ") {
		t.Errorf("ace clean left the killed eval's sockets in %s:\n%s", sockets[killed], out.String())
	}
	if !exists(sockets[running]) || strings.Contains(out.String(), sockets[running]) {
		t.Errorf("ace clean touched the running eval's sockets in %s:\n%s", sockets[running], out.String())
	}
	unlock()
	out.Reset()
	if err := runClean(ctx, app, cleanOptions{}); err != nil {
		t.Fatalf("ace clean: %v\n%s", err, out.String())
	}
	if exists(sockets[running]) || !strings.Contains(out.String(), "removed "+sockets[running]+" ") {
		t.Errorf("once the eval is over, ace clean left its sockets in %s:\n%s", sockets[running], out.String())
	}
}
