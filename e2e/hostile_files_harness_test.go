package e2e_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox/sandboxtest"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// The hostile agent (issue #35): claude's profile with a command of the user's own — a shell script, which runs
// the fake agent on a script per issue — boxed ([sandbox] mode "on"). It leaves in its working copy and its home,
// at each place ace reads or writes, what a prompt-injected model would: a link to a secret of the host's (a
// file the box does not show, which a host process alone can read), a hard link to it, a FIFO, a device, a huge
// file. What the box cannot make (a hard link to a file it cannot see, a device: mknod needs a capability no
// box has) the agent tries, the attempt is recorded, and the test makes it on the host, as an unboxed agent
// would have.

// attack is what the agent leaves at a file's place.
type attack string

const (
	symlinkAttack  attack = "symlink"
	hardlinkAttack attack = "hardlink"
	fifoAttack     attack = "fifo"
	deviceAttack   attack = "device"
	hugeAttack     attack = "huge"
)

// boxMakes reports whether the agent can leave the attack itself, in its box.
func (a attack) boxMakes() bool { return a != hardlinkAttack && a != deviceAttack }

// found is what ace's refusal must say it found.
func (a attack) found(secret string) string {
	return map[attack]string{
		symlinkAttack:  "a symlink out of the tree (to " + secret + ")",
		hardlinkAttack: "a hard link (a file of more than one name",
		fifoAttack:     "a FIFO",
		deviceAttack:   "a character device",
		hugeAttack:     "3.0 GiB, over the",
	}[a]
}

// hostile is a world whose agent is the hostile one.
type hostile struct {
	*world
	attack     attack
	secret     string // what the secret holds, which nothing of ace's may hold
	secretPath string // where it is on the host: outside the box, beside ace's root
	secretFile string // its whole content: JSON, as a credential file often is (ace merges JSON settings)
	scripts    string // the agent's script per issue: <scripts>/<issue>.txt
	issues     []int  // the issues added
}

// newHostile builds the world: the secret, the hostile command (with a file beside it the box must not show),
// claude's profile running it, boxed. tune changes the configuration further.
func newHostile(t *testing.T, a attack, tune func(*config.Config)) *hostile {
	t.Helper()
	sandboxtest.Host(t)
	if a == deviceAttack && os.Geteuid() != 0 {
		t.Skip("making a device needs root here (mknod); an agent in a box cannot make one either")
	}
	w := newWorld(t, "", nil)
	h := &hostile{world: w, attack: a, secretPath: filepath.Join(w.dir, "host-only", "id_ed25519"),
		secret: "HOST-SECRET-" + randomHex(t), scripts: filepath.Join(w.dir, "scripts")}
	h.secretFile = `{"api_key": "` + h.secret + `"}` + "\n"
	agents := filepath.Join(w.dir, "agents")
	for _, d := range []string{filepath.Dir(h.secretPath), agents, h.scripts} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFileMode(t, h.secretPath, h.secretFile, 0o600)
	writeFileMode(t, filepath.Join(agents, "beside-the-command.txt"), h.secret, 0o600)
	command := filepath.Join(agents, "hostile.sh")
	writeFileMode(t, command, fmt.Sprintf(`#!/bin/sh
# ace asks a CLI's version on the host, in its own directory: not the agent's business.
test "$1" = --version && { echo "hostile 1.0"; exit 0; }
# What the box shows of this script's directory: the script alone.
if cat "$(dirname "$0")/beside-the-command.txt" >/dev/null 2>&1; then r=ok; else r=denied; fi
mkdir -p .ace && echo "beside the command: $r" >> .ace/attempts.txt
script=%[2]s/$ACE_ISSUE.txt
test -e .ace/second-attempt && script=%[2]s/$ACE_ISSUE-2.txt
exec %[1]s demo-agent --script "$script"
`, w.bin, h.scripts), 0o755)
	fake := w.cfg.Agents["fake"]
	var claude config.AgentConfig
	claude.Command, claude.Env = command, fake.Env
	w.cfg.Agents = map[string]config.AgentConfig{"claude": claude}
	w.cfg.Agent.Default = "claude"
	w.cfg.Sandbox = config.SandboxConfig{Mode: config.SandboxOn, ReadOnly: []string{w.bin, h.scripts}}
	w.cfg.Monitor.IdleAfter = config.D(time.Minute) // the agent idles while the test leaves what it cannot
	if tune != nil {
		tune(w.cfg)
	}
	w.open()
	return h
}

func randomHex(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

func writeFileMode(t *testing.T, path, content string, mode fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

// issue adds issue n, labelled, whose agent runs script (and script2 in a second attempt, if any).
func (h *hostile) issue(n int, script string, script2 ...string) {
	h.t.Helper()
	h.gh.AddIssue(testRepo, fakegithub.IssueOptions{Number: n, Title: fmt.Sprintf("Task %d", n), Body: "Please add GREETING.md.", Author: "alice"})
	h.gh.Label(testRepo, n, "ace", "alice")
	h.issues = append(h.issues, n)
	writeFileMode(h.t, filepath.Join(h.scripts, strconv.Itoa(n)+".txt"), script, 0o644)
	if len(script2) > 0 {
		writeFileMode(h.t, filepath.Join(h.scripts, strconv.Itoa(n)+"-2.txt"), script2[0], 0o644)
	}
}

// start opens a run of issue n; its job works it from now on.
func (h *hostile) start(n int) *store.Run {
	h.t.Helper()
	ctx := context.Background()
	r, err := h.svc.Engine.Open(ctx, workflow.Request{Repo: testRepo, Issue: n, NewAttempt: true})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.svc.Engine.Follow(ctx, r, func(*store.Run) bool { return true }); err != nil { // enqueues its job
		h.t.Fatal(err)
	}
	return r
}

// follow follows r until until holds, within d: a run that takes longer fails the test (the guards must never
// make a run wait on a file).
func (h *hostile) follow(r *store.Run, d time.Duration, until workflow.Until) *store.Run {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := h.svc.Engine.Follow(ctx, r, until); err != nil {
		screen, _ := h.svc.Tmux.Capture(context.Background(), r.Session, 50)
		h.t.Fatalf("#%d did not get there within %s: %v (run %s at %s: %s)\n%s\nscreen:\n%s", r.Issue, d, err, r.Status, r.Step, r.Error, h.eventLog(r), screen)
	}
	return r
}

// plant is the agent's script lines that leave the attack at path (as the agent names it: relative to its
// working copy, or under $CLAUDE_CONFIG_DIR); what the box cannot make, it tries, and the attempt is recorded
// in .ace/attempts.txt.
func (h *hostile) plant(path string) string {
	rec := func(what string) string {
		return fmt.Sprintf(" && echo '%[1]s %[2]s: ok' >> .ace/attempts.txt || echo '%[1]s %[2]s: denied' >> .ace/attempts.txt", what, path)
	}
	switch h.attack {
	case symlinkAttack:
		return fmt.Sprintf("sh rm -rf %[1]s; ln -s %[2]s %[1]s\n", path, h.secretPath)
	case fifoAttack:
		return fmt.Sprintf("sh rm -rf %[1]s; mkfifo %[1]s\n", path)
	case hugeAttack:
		return fmt.Sprintf("sh rm -rf %[1]s; truncate -s 3G %[1]s\n", path)
	case hardlinkAttack:
		return fmt.Sprintf("sh ln -f %s %s 2>/dev/null%s\n", h.secretPath, path, rec("hardlink"))
	case deviceAttack:
		return fmt.Sprintf("sh rm -f %[1]s; mknod %[1]s c 1 5 2>/dev/null%[2]s\n", path, rec("mknod"))
	}
	h.t.Fatalf("attack %q", h.attack)
	return ""
}

// leave makes the attack at path on the host, for what the box cannot make: once the agent has planted what it
// can (.ace/planted), as an unboxed agent would have.
func (h *hostile) leave(path string) {
	h.t.Helper()
	if h.attack.boxMakes() {
		return
	}
	_ = os.Remove(path)
	var err error
	switch h.attack {
	case hardlinkAttack:
		err = os.Link(h.secretPath, path)
	case deviceAttack:
		err = syscall.Mknod(path, syscall.S_IFCHR|0o644, 1<<8|5) // /dev/zero's: a read never ends
	}
	if err != nil {
		h.t.Fatalf("leave a %s at %s: %v", h.attack, path, err)
	}
}

// planted waits for the agent of r to say it left what it could (its working copy's .ace/planted).
func (h *hostile) planted(r *store.Run) *store.Run {
	h.t.Helper()
	cur := r
	for deadline := time.Now().Add(runWithin); ; time.Sleep(20 * time.Millisecond) {
		if latest, err := h.svc.Store.LatestRun(context.Background(), testRepo, r.Issue); err == nil {
			cur = latest
		}
		if cur.Workdir != "" {
			if _, err := os.Stat(filepath.Join(cur.Workdir, ".ace", "planted")); err == nil {
				return cur
			}
		}
		if cur.Status.Terminal() || time.Now().After(deadline) {
			h.t.Fatalf("#%d's agent did not plant its files (run %s at %s: %s)\n%s", r.Issue, cur.Status, cur.Step, cur.Error, h.eventLog(cur))
		}
	}
}

// sessionFile is where the agent's CLI (claude) keeps a session of the run, as the agent names it and as it
// is on the host.
func (h *hostile) sessionFile(r *store.Run) (inBox, onHost string) {
	dir := regexp.MustCompile(`[^A-Za-z0-9]`).ReplaceAllString(r.Workdir, "-")
	inBox = `"$CLAUDE_CONFIG_DIR/projects/$(pwd | sed 's/[^A-Za-z0-9]/-/g')/hostile.jsonl"`
	if r.State.Box == nil {
		return inBox, ""
	}
	return inBox, filepath.Join(r.State.Box.Home, ".claude", "projects", dir, "hostile.jsonl")
}

// refused asserts that the run's events record ace's refusal of the file at path (relative to its tree) with
// what the attack left there.
func (h *hostile) refused(r *store.Run, path string) {
	h.t.Helper()
	want := "file-refused: refused " + path + ": " + h.attack.found(h.secretPath)
	if log := h.eventLog(r); !strings.Contains(log, want) {
		h.t.Errorf("#%d: the events lack %q:\n%s", r.Issue, want, log)
	}
}

// attempts asserts what the agent's box let it do: never read beside its command, nor make what the box cannot.
func (h *hostile) attempts(r *store.Run) {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.Workdir, ".ace", "attempts.txt"))
	if err != nil {
		h.t.Fatalf("#%d: the agent's attempts: %v", r.Issue, err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if !strings.HasSuffix(l, ": denied") {
			h.t.Errorf("#%d: the box let the agent do %q", r.Issue, l)
		}
	}
	if !strings.Contains(string(b), "beside the command: denied") {
		h.t.Errorf("#%d: attempts %q lack the read beside the command", r.Issue, b)
	}
}

// secretNowhere asserts that the secret reached nothing ace keeps or sends: no file under ace's root (the store
// and its events, the memory, the logs, every working copy and home) but the attack's own hard links to it, no
// issue or pull request comment, no pull request, no pushed commit — and that it is as it was.
func (h *hostile) secretNowhere() {
	h.t.Helper()
	secretInfo, err := os.Stat(h.secretPath)
	if err != nil {
		h.t.Fatal(err)
	}
	if b, err := os.ReadFile(h.secretPath); err != nil || string(b) != h.secretFile {
		h.t.Errorf("the secret file now holds %q (%v)", b, err)
	}
	root := h.cfg.Workspace.Root
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		fi, err := d.Info()
		if err != nil || os.SameFile(fi, secretInfo) || fi.Size() > 64<<20 {
			return nil
		}
		if holds(h.t, p, h.secret) {
			h.t.Errorf("the secret is in %s", p)
		}
		return nil
	})
	var texts []string
	for _, pr := range h.gh.PRs(testRepo) {
		texts = append(texts, pr.Title, pr.Body)
		for _, c := range h.gh.Comments(testRepo, pr.Number) {
			texts = append(texts, c.Body)
		}
	}
	for _, n := range append([]int{testIssue}, h.issues...) {
		for _, c := range h.gh.Comments(testRepo, n) {
			texts = append(texts, c.Body)
		}
	}
	if strings.Contains(strings.Join(texts, "\n"), h.secret) {
		h.t.Errorf("the secret reached GitHub")
	}
	out, err := exec.Command("git", "-C", h.remote, "log", "-p", "--all").CombinedOutput()
	if err != nil {
		h.t.Fatalf("git log of the remote: %v\n%s", err, out)
	}
	if strings.Contains(string(out), h.secret) {
		h.t.Errorf("the secret was pushed")
	}
}

// holds reports whether the file at p contains s, reading it a line at a time.
func holds(t *testing.T, p, s string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}

// boundedMemory asserts that this process (ace runs in it) never held anything like a huge file: its peak
// resident size stays far under the 3 GiB an unguarded read would take.
func boundedMemory(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			if kb > 1<<20 {
				t.Errorf("ace's peak resident size is %d MiB", kb>>10)
			}
			return
		}
	}
}
