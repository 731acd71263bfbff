package e2e_test

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sandbox/sandboxtest"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// The hostile-git suite: a scripted agent, boxed ([sandbox] mode "on"), does its work and then plants in its
// working copy — .git included — what a prompt-injected model could to act on the host through ace's own git:
// hooks, programs and drivers in the configuration, redirected remotes, a .git swapped for something else, a
// FIFO. ace then commits what it left, reads the work, hands over and pushes, through the real engine. For each
// mechanism the suite shows that nothing ran on the host (a program planted leaves a marker in a directory only a
// host process can write: the box does not show it), that the token reached the git server of the forge alone
// (an attacker's server every redirect points at records no request) and that the run ended in its time: done
// with its pull request where ace ignores what was planted, failed with an event naming what it refused where it
// refuses. Mechanisms that cannot mask one another share a run (cases_test: gitRuns).

// hostileGit is one boxed run of the suite.
type hostileGit struct {
	w           *world
	run         gitRun
	markers     string // only a process on the host can write here
	outside     string // a directory of the host the box does not show (a canary in it)
	attacker    *requestLog
	attackerSrv string      // its URL
	forge       *requestLog // the Authorization headers the forge's git server got
	plant       string      // the plant script, shown read-only in the box
}

// requestLog records requests, safe for the servers' goroutines.
type requestLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *requestLog) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.lines)
}

// canary is what the files outside the box hold: it must reach no branch and no box.
const canary = "host-canary-5f1e0c"

// hooks are every hook git 2.39 runs (githooks(5)).
var hooks = []string{"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge", "pre-push",
	"pre-receive", "update", "proc-receive", "post-receive", "post-update", "reference-transaction", "push-to-checkout",
	"pre-auto-gc", "post-rewrite", "sendemail-validate", "fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist",
	"p4-post-changelist", "p4-pre-submit", "post-index-change"}

// prelude is the start of every plant script: M the markers, A the attacker, R the forge's remote, O the outside
// directory; hook NAME PATH and prog NAME PATH make a program at PATH that leaves the marker NAME (prog passes its
// input on, as a filter must, and prints its absolute path).
func (h *hostileGit) prelude() string {
	return fmt.Sprintf(`set -e
M=%q; A=%q; R=%q; O=%q
HOOKS=%q
hook() { mkdir -p "$(dirname "$2")"; printf '#!/bin/sh\necho ran > %%s/%%s\n' "$M" "$1" > "$2"; chmod +x "$2"; }
prog() { mkdir -p "$(dirname "$2")"; printf '#!/bin/sh\necho ran > %%s/%%s\ncat\n' "$M" "$1" > "$2"; chmod +x "$2"; echo "$PWD/$2"; }
`, h.markers, h.attackerURL(), h.w.git.URL("acme/widgets.git"), h.outside, strings.Join(hooks, " "))
}

func (h *hostileGit) attackerURL() string { return h.attackerSrv }

// agentScript is the agent's turn: its work committed, then the plant, then a file left for ace to commit.
func (h *hostileGit) agentScript() string {
	return fmt.Sprintf(`write GREETING.md Hello from a hostile agent!\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
sh mkdir -p .ace && sh %s > .ace/plant.log 2>&1 && echo planted > .ace/planted
write LEFTOVER.md left for ace to commit\n
done Added GREETING.md.
`, h.plant)
}

// newHostileGit builds the run's world: boxed, its agent scripted to plant run.plant (or run.script's turns).
func newHostileGit(t *testing.T, run gitRun) *hostileGit {
	t.Helper()
	sandboxtest.Host(t)
	h := &hostileGit{run: run, attacker: &requestLog{}, forge: &requestLog{}}
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		h.attacker.add(fmt.Sprintf("%s %s host=%s auth=%q", r.Method, r.RequestURI, r.Host, r.Header.Get("Authorization")))
		http.Error(rw, "attacker", http.StatusTeapot)
	}))
	t.Cleanup(srv.Close)
	h.attackerSrv = srv.URL
	if run.runner == "exec" {
		h.w = newHeadlessWorld(t, "claude", "idle\n", nil)
	} else {
		h.w = newWorld(t, "idle\n", nil)
	}
	h.markers, h.outside = filepath.Join(h.w.dir, "markers"), filepath.Join(h.w.dir, "outside")
	for _, d := range []string{h.markers, h.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(h.outside, "canary.txt"), []byte(canary+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.w.git.OnRequest(func(r *http.Request) { h.forge.add(r.Header.Get("Authorization")) })
	h.plant = filepath.Join(h.w.dir, "plant.sh")
	if err := os.WriteFile(h.plant, []byte(h.prelude()+run.plant), 0o755); err != nil {
		t.Fatal(err)
	}
	script := h.agentScript()
	if run.script != nil {
		script = run.script(h)
	}
	h.w.rescript(t, script, func(c *config.Config) {
		if run.tune != nil {
			run.tune(c, h)
		}
		h.box(c)
	})
	return h
}

// box turns the sandbox on for every agent of the world: each sees its script and the plant script read-only and
// keeps no record outside its box (a headless agent keeps its state in its working copy).
func (h *hostileGit) box(c *config.Config) {
	ro := []string{h.plant}
	for name, a := range c.Agents {
		for _, cmd := range []*string{&a.Command, &a.Headless, &a.HeadlessResume} {
			if before, after, ok := strings.Cut(*cmd, " --record "); ok {
				_, rest, _ := strings.Cut(after, " ")
				*cmd = strings.TrimSpace(before + " " + rest)
			}
			if _, after, ok := strings.Cut(*cmd, " --script "); ok {
				script, _, _ := strings.Cut(after, " ")
				if !slices.Contains(ro, script) {
					ro = append(ro, script)
				}
			}
		}
		if a.Headless != "" {
			a.Headless += " --state .ace/fake.state"
			a.HeadlessResume += " --state .ace/fake.state"
		}
		c.Agents[name] = a
	}
	c.Sandbox = config.SandboxConfig{Mode: config.SandboxOn, ReadOnly: ro}
}

// ran are the markers on the host: what programs of the working copy did there.
func (h *hostileGit) ran(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(h.markers)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// check asserts what every run of the suite must show, then the run's own ending.
func (h *hostileGit) check(t *testing.T, r *store.Run) {
	t.Helper()
	log := h.w.eventLog(r)
	if r.Workdir != "" {
		if _, err := os.Stat(filepath.Join(r.Workdir, ".ace", "planted")); err != nil {
			b, _ := os.ReadFile(filepath.Join(r.Workdir, ".ace", "plant.log"))
			t.Errorf("the agent's plant did not finish: %v\n%s", err, b)
		}
	}
	if ran := h.ran(t); len(ran) > 0 {
		t.Errorf("programs of the working copy ran on the host: %q", ran)
	}
	if got := h.attacker.all(); len(got) > 0 {
		t.Errorf("the attacker's server was reached: %q", got)
	}
	bot := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+botToken))
	for _, a := range h.forge.all() {
		if a != "" && a != bot {
			t.Errorf("the forge's git server got Authorization %q", a)
		}
	}
	if !slices.Contains(h.forge.all(), bot) && h.run.refused == "" {
		t.Errorf("the forge's git server never got the token: %q", h.forge.all())
	}
	if out, err := exec.Command("git", "--git-dir", h.w.remote, "log", "--all", "-p").CombinedOutput(); err != nil || strings.Contains(string(out), canary) {
		t.Errorf("the remote holds the canary from outside the box (%v)", err)
	}
	if h.run.refused != "" {
		if r.Status != store.StatusFailed || !strings.Contains(log, h.run.refused) {
			t.Errorf("run %s at %s (%s), want it failed with an event saying %q:\n%s", r.Status, r.Step, r.Error, h.run.refused, log)
		}
		if strings.Contains(gittest.Run(t, h.w.remote, "branch", "--list", r.Branch), r.Branch) &&
			strings.Contains(gittest.Run(t, h.w.remote, "ls-tree", "-r", "--name-only", r.Branch), "LEFTOVER.md") {
			t.Errorf("ace committed and pushed what it refused")
		}
		return
	}
	if r.PRURL == "" || (r.Status != store.StatusDone && workflow.Step(r.Step) != workflow.StepFollowPR) {
		t.Errorf("run %s at %s (%s), want done with its pull request:\n%s", r.Status, r.Step, r.Error, log)
		return
	}
	files := gittest.Run(t, h.w.remote, "ls-tree", "-r", "--name-only", r.Branch)
	for _, want := range []string{"GREETING.md", "LEFTOVER.md"} {
		if !strings.Contains(files, want) {
			t.Errorf("the pushed branch lacks %s (ace's commit of what the agent left):\n%s", want, files)
		}
	}
}

// TestHostileGit runs the suite: one boxed run per gitRun, in parallel, and one case per mechanism in each.
func TestHostileGit(t *testing.T) {
	t.Parallel()
	for _, run := range gitRuns {
		t.Run(run.name, func(t *testing.T) {
			t.Parallel()
			h := newHostileGit(t, run)
			var r *store.Run
			if run.drive != nil {
				r = run.drive(t, h)
			} else {
				r = h.w.run(workflow.UntilSettled)
			}
			h.check(t, r)
			if run.check != nil {
				run.check(t, h, r)
			}
			ran := h.ran(t)
			for _, m := range run.mechanisms {
				t.Run(m.name, func(t *testing.T) {
					for _, marker := range m.markers {
						if slices.ContainsFunc(ran, func(s string) bool { return strings.HasPrefix(s, marker) }) {
							t.Errorf("%s: %s ran on the host", m.name, marker)
						}
					}
					if m.check != nil {
						m.check(t, h, r)
					}
				})
			}
		})
	}
}
