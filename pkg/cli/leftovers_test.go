package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/procs"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// TestDoctorNamesAndCleanRemovesWhatACrashLeft: an env file whose ace died before its launcher read it, a
// control session of a dead ace, an agent session no run owns and the proxy socket of a run that is over are
// each named by ace doctor and removed by ace clean; what a live ace or an unfinished run still uses is left.
func TestDoctorNamesAndCleanRemovesWhatACrashLeft(t *testing.T) {
	t.Parallel()
	cfg, tmux := cleanConfig(t)
	root, ctx := cfg.Workspace.Root, context.Background()

	// A process that has ended: the ace that wrote the env file and named the control session.
	dead := exec.Command("sleep", "60")
	if err := dead.Start(); err != nil {
		t.Fatal(err)
	}
	st, err := procs.Read(dead.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = dead.Process.Kill()
	_ = dead.Wait()
	deadPID := dead.Process.Pid
	run := filepath.Join(root, "run")
	if err := os.MkdirAll(run, 0o700); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(run, fmt.Sprintf("env-%d.%d-1", deadPID, st.Start))
	if err := os.WriteFile(envFile, []byte(`{"KEY":"secret"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	if err := os.Chtimes(envFile, old, old); err != nil {
		t.Fatal(err)
	}
	liveEnv, err := tmuxops.WriteEnvFile(run, map[string]string{"KEY": "v"}) // this process's, just written
	if err != nil {
		t.Fatal(err)
	}

	ctl := tmuxops.ControlPrefix + strconv.Itoa(deadPID)
	for _, name := range []string{ctl, "ace-widgets-9", "ace-widgets-2"} {
		if err := tmux.NewSession(ctx, tmuxops.SessionSpec{Name: name, Dir: root, Argv: []string{"sleep", "600"}}); err != nil {
			t.Fatal(err)
		}
	}

	// Run 1 is done and its proxy's socket stayed (its ace was killed); run 2 works on, its ace away for now.
	db, err := store.Open(ctx, filepath.Join(root, "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	var sockets []string
	for i, status := range []store.Status{store.StatusDone, store.StatusActive} {
		r := &store.Run{Repo: "acme/widgets", Issue: 1 + i, Attempt: 1, Agent: "codex", Runner: "tmux", Step: "monitor",
			Status: store.StatusActive, Session: "ace-widgets-" + strconv.Itoa(1+i)}
		if err := db.CreateRun(ctx, r); err != nil {
			t.Fatal(err)
		}
		sock := filepath.Join(root, "boxes", strconv.FormatInt(r.ID, 10), "egress", "egress.sock")
		staleSocket(t, sock)
		sockets = append(sockets, sock)
		r.State.Box = &store.BoxState{Proxy: sock}
		if status == store.StatusDone {
			r.Step, r.Status = "done", store.StatusDone
		}
		if err := db.UpdateRun(ctx, r, nil); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	var out bytes.Buffer
	app := &App{Config: cfg, Stdout: &out, Stderr: &out}
	doctor := func() string {
		out.Reset()
		db, err := store.Open(ctx, filepath.Join(root, "ace.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		checkLeftovers(ctx, &check{app: app}, app, db)
		return out.String()
	}
	report := doctor()
	for _, want := range []string{"env file " + envFile, "written by ace " + strconv.Itoa(deadPID), "tmux control session " + ctl,
		"tmux session ace-widgets-9", "socket " + sockets[0], "ace clean removes it"} {
		if !strings.Contains(report, want) {
			t.Errorf("ace doctor does not name %q:\n%s", want, report)
		}
	}
	for _, unwanted := range []string{liveEnv, sockets[1], "ace-widgets-2 "} {
		if strings.Contains(report, unwanted) {
			t.Errorf("ace doctor names %q, which is still in use:\n%s", unwanted, report)
		}
	}

	out.Reset()
	if err := runClean(ctx, app, cleanOptions{}); err != nil {
		t.Fatalf("ace clean: %v\n%s", err, out.String())
	}
	cleaned := out.String()
	for _, want := range []string{"removed env file " + envFile, "removed tmux control session " + ctl,
		"removed tmux session ace-widgets-9", "removed socket " + sockets[0]} {
		if !strings.Contains(cleaned, want) {
			t.Errorf("ace clean does not say %q:\n%s", want, cleaned)
		}
	}
	for _, gone := range []string{envFile, sockets[0]} {
		if _, err := os.Lstat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there after ace clean", gone)
		}
	}
	for _, kept := range []string{liveEnv, sockets[1]} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("ace clean removed %s, still in use: %v", kept, err)
		}
	}
	if ok, _ := tmux.HasSession(ctx, "ace-widgets-2"); !ok {
		t.Error("ace clean ended the session of an unfinished run")
	}
	if after := doctor(); !strings.Contains(after, "ok    crash leftovers") {
		t.Errorf("ace doctor after ace clean:\n%s", after)
	}
}

// staleSocket leaves a socket file at path that nobody listens on, as a killed process does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
}
