package sandbox_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/pkg/egress"
	"github.com/aceworks/ace/pkg/sandbox"
)

func exitMain(args []string) int {
	if len(args) == 1 && args[0] == "term" {
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		select {}
	}
	n, _ := strconv.Atoi(args[0])
	return n
}

func dirs(t *testing.T, names ...string) []string {
	t.Helper()
	root := t.TempDir()
	var out []string
	for _, n := range names {
		p := filepath.Join(root, n)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func TestWrapKeepsSecretsOutOfArgv(t *testing.T) {
	h := host(t)
	d := dirs(t, "wc", "home", "run")
	sock := filepath.Join(d[2], "egress.sock")
	ln, err := egress.ListenUnix(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const secret = "sk-ant-secret-value"
	box, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], ProxySocket: sock, Env: map[string]string{"ANTHROPIC_API_KEY": secret}}, []string{"claude", "--model", "sonnet"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(box.Argv, "\x00"), secret) {
		t.Fatalf("the secret is in the argv: %q", box.Argv)
	}
	if box.Env["ANTHROPIC_API_KEY"] != secret || box.Env["HOME"] != d[1] || box.Env["PATH"] == "" {
		t.Fatalf("env %v", box.Env)
	}
	for _, k := range []string{"HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"} {
		if box.Env[k] != "http://127.0.0.1:3128" || box.ProxyURL != box.Env[k] {
			t.Fatalf("%s = %q", k, box.Env[k])
		}
	}
	if box.Argv[0] != h.Path() || !slices.Contains(box.Argv, "--unshare-all") || !slices.Contains(box.Argv, "--new-session") {
		t.Fatalf("argv %q", box.Argv)
	}
	if tail := box.Argv[len(box.Argv)-4:]; !slices.Equal(tail, []string{"--", "claude", "--model", "sonnet"}) {
		t.Fatalf("argv ends %q", tail)
	}
	tb, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], Terminal: true}, []string{"claude"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(tb.Argv, "--new-session") || slices.Contains(tb.Argv, "--proxy-socket") {
		t.Fatalf("terminal box without proxy: %q", tb.Argv)
	}
}

// TestMountOrder: a path hidden below a read-only one is masked after it, and a working copy below the hidden
// one is mounted after the mask.
func TestMountOrder(t *testing.T) {
	h := host(t)
	d := dirs(t, "home", "home/.local/share/ace/worktrees/r/1", "home/.local/share/ace/homes/claude", "home/.ssh")
	home, wc, agentHome, ssh := d[0], d[1], d[2], d[3]
	aceRoot := filepath.Join(home, ".local/share/ace")
	box, err := h.Wrap(sandbox.Spec{WorkDir: wc, Home: agentHome, ReadOnly: []string{home}, Hide: []string{ssh, aceRoot}}, []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	at := func(op, path string) int {
		for i := 0; i+1 < len(box.Argv); i++ {
			if box.Argv[i] == op && box.Argv[i+1] == path {
				return i
			}
		}
		t.Fatalf("no %s %s in %q", op, path, box.Argv)
		return -1
	}
	ro, hideSSH, hideRoot, bindWC := at("--ro-bind", home), at("--tmpfs", ssh), at("--tmpfs", aceRoot), at("--bind", wc)
	if !(ro < hideSSH && ro < hideRoot && hideRoot < bindWC) {
		t.Fatalf("order ro=%d hide .ssh=%d hide root=%d wc=%d: %q", ro, hideSSH, hideRoot, bindWC, box.Argv)
	}
	// Run it: the key under the read-only home is masked, the working copy below the masked root is there, and
	// hidden paths that do not exist or that no mount contains cost nothing.
	if err := os.WriteFile(filepath.Join(ssh, "id_ed25519"), []byte("key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(wc, "mine"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	box, err = h.Wrap(sandbox.Spec{WorkDir: wc, Home: agentHome, Self: self(t), ReadOnly: []string{home},
		Hide: []string{ssh, aceRoot, filepath.Join(home, "missing"), "/etc/shadow"}},
		[]string{"sh", "-c", "ls -A " + ssh + "; cat " + filepath.Join(wc, "mine") + "; ls -A " + aceRoot})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(box.Argv, "/etc/shadow") || slices.Contains(box.Argv, filepath.Join(home, "missing")) {
		t.Errorf("a mask for a path the box cannot see anyway: %q", box.Argv)
	}
	out, err := box.Command(context.Background()).CombinedOutput()
	if err != nil || string(out) != "mine"+"homes\nworktrees\n" {
		t.Fatalf("inside: %q %v", out, err)
	}
	if _, err := h.Wrap(sandbox.Spec{WorkDir: wc, Home: agentHome, ReadOnly: []string{"relative/path"}}, []string{"true"}); err == nil {
		t.Fatal("a relative path was accepted")
	}
	if _, err := h.Wrap(sandbox.Spec{WorkDir: wc, Home: agentHome, ReadOnly: []string{filepath.Join(home, "missing")}}, []string{"true"}); err == nil {
		t.Fatal("a missing read-only path was accepted")
	}
}

func TestExitStatus(t *testing.T) {
	h := host(t)
	d := dirs(t, "wc", "home")
	for _, c := range []struct {
		arg  string
		want int
	}{{"0", 0}, {"7", 7}, {"term", 128 + int(syscall.SIGTERM)}} {
		box, err := h.Wrap(sandbox.Spec{WorkDir: d[0], Home: d[1], Self: self(t)}, []string{sandbox.SelfPath, "exit", c.arg})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := box.Command(ctx).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		got := 0
		if errors.As(err, &ee) {
			got = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("exit %s: status %d, want %d (%s)", c.arg, got, c.want, out)
		}
	}
}

func TestNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := sandbox.Available(context.Background())
	if !errors.Is(err, sandbox.ErrUnavailable) || !strings.Contains(err.Error(), sandbox.InstallHint) {
		t.Fatalf("Available without bwrap: %v", err)
	}
}

// TestLinks: a program shown as its file alone runs through a link the box makes to it in a directory it does
// not otherwise see (a bin directory under a hidden home), and nothing beside the file is there; a link whose
// path is in one of the box's own mounts is not made (it would be made in the host's directory).
func TestLinks(t *testing.T) {
	h := host(t)
	d := dirs(t, "home", "home/wc", "home/agent-home", "home/work", "home/bin")
	home, wc, agentHome, work, bin := d[0], d[1], d[2], d[3], d[4]
	prog := filepath.Join(work, "agent.sh")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\necho from the agent\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "beside.txt"), []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := sandbox.Spec{WorkDir: wc, Home: agentHome, Self: self(t), ReadOnly: []string{prog}, Hide: []string{home},
		Links: []sandbox.Link{{Path: filepath.Join(bin, "agent"), Target: prog}, {Path: filepath.Join(wc, "made"), Target: prog}}}
	box, err := h.Wrap(spec, []string{"sh", "-c", filepath.Join(bin, "agent") + "; ls -A " + work + "; ls -A " + wc})
	if err != nil {
		t.Fatal(err)
	}
	out, err := box.Command(context.Background()).CombinedOutput()
	if err != nil || string(out) != "from the agent\nagent.sh\n" {
		t.Fatalf("inside: %q %v\n%q", out, err, box.Argv)
	}
	if _, err := os.Lstat(filepath.Join(wc, "made")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a link was made in the working copy on the host: %v", err)
	}
}
