package e2e_test

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/sandbox/sandboxtest"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// escapee is what the boxed fake agent tries on the host: files it must not read, one it must not write, a
// destination off the allow list and the git server (allowed, reached through a forwarded port).
type escapee struct {
	outside  string // a file of the test's, outside the box
	otherRun string // another run's working copy
	root     string // ace's root: store, logs, other runs
	refused  string // a URL off the allow list
	allowed  string // the git server's URL: the remote's host, forwarded
	gitPort  int
	// setupRead is a file under ace's root the repository's setup command tries to read (TestSandboxRepoWorkflow):
	// its box records the attempt as the agent's does.
	setupRead string
}

func newEscapee(t *testing.T, w *world) escapee {
	t.Helper()
	e := escapee{outside: filepath.Join(w.dir, "outside-secret.txt"), root: w.cfg.Workspace.Root,
		otherRun: filepath.Join(w.cfg.Workspace.Root, "worktrees", "acme", "other", "7", "SECRET.md"),
		refused:  "http://refused.invalid/exfiltrate.git", allowed: w.git.URL("acme/widgets.git")}
	for _, f := range []string{e.outside, e.otherRun} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, []byte("host-secret-canary"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	u, err := url.Parse(e.allowed)
	if err != nil {
		t.Fatal(err)
	}
	e.gitPort, _ = strconv.Atoi(u.Port())
	return e
}

// script is the fake agent's turn: each attempt appends "name: ok" or "name: denied" to .ace/attempts.txt
// (git-excluded), then it does its work and says it is done.
func (e escapee) script() string {
	try := func(name, cmd string) string {
		return fmt.Sprintf("sh (%s) >/dev/null 2>&1 && echo '%s: ok' >> .ace/attempts.txt || echo '%s: denied' >> .ace/attempts.txt\n", cmd, name, name)
	}
	return "sh mkdir -p .ace\n" +
		try("outside-file", "cat "+e.outside) +
		try("other-run", "cat "+e.otherRun) +
		try("ace-store", "cat "+filepath.Join(e.root, "ace.db")) +
		try("ace-logs", "ls "+filepath.Join(e.root, "logs")+" | grep .") +
		try("host-proc", "cat /proc/"+strconv.Itoa(os.Getpid())+"/environ") +
		try("write-system", "touch /usr/pwned") +
		try("own-secret", `test "$FAKE_AGENT_KEY" = fake-agent-secret-value-42`) +
		try("refused-host", "GIT_TERMINAL_PROMPT=0 git ls-remote "+e.refused) +
		// The git server wants the bot's token, which the agent has not: that it asked is the proof it was reached.
		try("allowed-host", "GIT_TERMINAL_PROMPT=0 git ls-remote "+e.allowed+" 2>&1 | grep -q 'could not read Username\\|Authentication failed'") +
		"write GREETING.md Hello from a box!\\n\n" +
		"sh git add GREETING.md && git commit -q -m \"Add GREETING.md\"\n" +
		"done Added GREETING.md from inside the box.\n"
}

// boxed turns the world's sandbox on: the fake agent sees its script read-only, keeps no record (the test's
// files are outside the box), and reaches the git server through a forwarded port.
func (e escapee) boxed(scriptDir string) func(*config.Config) {
	return func(c *config.Config) {
		c.Sandbox = config.SandboxConfig{Mode: config.SandboxOn, ReadOnly: []string{filepath.Join(scriptDir, "agent-script.txt")},
			Forward: []int{e.gitPort}}
		a := c.Agents["fake"]
		for _, cmd := range []*string{&a.Command, &a.Headless, &a.HeadlessResume} {
			if before, after, ok := strings.Cut(*cmd, " --record "); ok {
				_, rest, _ := strings.Cut(after, " ")
				*cmd = strings.TrimSpace(before + " " + rest)
			}
		}
		if a.Headless != "" {
			a.Headless += " --state .ace/fake.state"
			a.HeadlessResume += " --state .ace/fake.state"
		}
		c.Agents["fake"] = a
	}
}

// check asserts what a boxed run of the escapee's script must show: every forbidden attempt failed, the allowed
// ones worked, the pull request carries the agent's commit, and the events and the status comment record the
// refusal.
func (e escapee) check(t *testing.T, w *world, r *store.Run) {
	t.Helper()
	if r.Status != store.StatusDone || r.PRURL == "" {
		t.Fatalf("run ended %s at %s (%s), want done with a pull request\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
	}
	b, err := os.ReadFile(filepath.Join(r.Workdir, ".ace", "attempts.txt"))
	if err != nil {
		t.Fatalf("the agent's attempts: %v\n%s", err, w.eventLog(r))
	}
	want := []string{"outside-file: denied", "other-run: denied", "ace-store: denied", "ace-logs: denied", "host-proc: denied",
		"write-system: denied", "own-secret: ok", "refused-host: denied", "allowed-host: ok"}
	if strings.TrimSpace(string(b)) != strings.Join(want, "\n") {
		t.Errorf("attempts:\n%s\nwant:\n%s", b, strings.Join(want, "\n"))
	}
	if got := gittest.Run(t, w.remote, "show", r.Branch+":GREETING.md"); got != "Hello from a box!" {
		t.Errorf("pushed GREETING.md = %q", got)
	}
	log := w.eventLog(r)
	for _, want := range []string{
		"sandbox: fake runs boxed",
		"egress: refused GET refused.invalid:80: not on the run's allow list",
		fmt.Sprintf("egress: reached CONNECT 127.0.0.1:%d", e.gitPort),
		// The file attempts: each one failed (above), and each that opened or wrote a path is recorded. Not
		// outside-file, in the host's /tmp, which is the box's own /tmp (where it is not): nothing was kept from
		// the agent there; nor ace-logs: ls stats the path first and, finding nothing, opens nothing (a stat is
		// not recorded).
		"box-file: kept the agent from reading " + e.otherRun + " (",
		"box-file: kept the agent from reading " + filepath.Join(e.root, "ace.db") + " (",
		"box-file: kept the agent from /proc/" + strconv.Itoa(os.Getpid()) + "/environ (",
		"box-file: kept the agent from writing /usr/pwned (",
	} {
		if !strings.Contains(log, want) {
			t.Errorf("events lack %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, fmt.Sprintf("reached CONNECT 127.0.0.1:%d", e.gitPort)); n != 1 {
		t.Errorf("the allowed destination is recorded %d times, want once", n)
	}
	if b := r.State.Box; b == nil || b.Refused == 0 || len(b.RefusedTo) == 0 || b.RefusedTo[0] != "refused.invalid:80" {
		t.Errorf("box state %+v, want the refusal counted", r.State.Box)
	}
	if b := r.State.Box; b == nil || b.Blocked < 4 || !slices.Contains(b.BlockedAt, "/usr/pwned") || b.FilesUnrecorded != "" {
		t.Errorf("box state %+v, want the file attempts counted", r.State.Box)
	}
	files := 4
	if e.setupRead != "" {
		files++
		if !strings.Contains(log, "box-file: kept the agent from reading "+e.setupRead+" (") {
			t.Errorf("events lack setup's attempt at %s:\n%s", e.setupRead, log)
		}
	}
	// Nothing else: not what the agent did in its working copy (git, its script), nor the fake agent's own reads.
	if n := strings.Count(log, "box-file: "); n != files {
		t.Errorf("%d file attempts recorded, want the %d of the scripts:\n%s", n, files, log)
	}
	status := w.statusComments()
	if len(status) != 1 || !strings.Contains(status[0], "| sandbox | refused") || !strings.Contains(status[0], "`refused.invalid:80`") ||
		!strings.Contains(status[0], "; kept the agent from ") || !strings.Contains(status[0], "`/usr/pwned`") {
		t.Errorf("status comment %q, want a sandbox row naming the refusal and the file attempts", status)
	}
	if line := runbox.Line(r); !strings.HasPrefix(line, "boxed; refused") || !strings.Contains(line, "; kept the agent from ") {
		t.Errorf("sandbox line %q", line)
	}
}

// TestSandboxTmux: the fake agent, boxed in its tmux pane, tries to get out and fails at each attempt, reaches
// what is allowed, does its work, and the run opens its pull request with the refusal on record.
func TestSandboxTmux(t *testing.T) {
	t.Parallel()
	sandboxtest.Host(t)
	w := newWorld(t, "idle\n", nil)
	e := newEscapee(t, w)
	w.rescript(t, e.script(), e.boxed(w.dir))
	r := w.run(workflow.UntilSettled)
	e.check(t, w, r)
}

// TestSandboxExec: the same with the headless runner, each turn boxed under its supervisor.
func TestSandboxExec(t *testing.T) {
	t.Parallel()
	sandboxtest.Host(t)
	w := newHeadlessWorld(t, "claude", "idle\n", nil)
	e := newEscapee(t, w)
	w.rescript(t, e.script(), e.boxed(w.dir))
	r := w.run(workflow.UntilSettled)
	e.check(t, w, r)
}

// rescript gives the world's fake agent script and changes the configuration with tune before its ace starts
// working runs again: the escapee's paths are known only once the world exists.
func (w *world) rescript(t *testing.T, script string, tune func(*config.Config)) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(w.dir, "agent-script.txt"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	tune(w.cfg)
	w.open()
}

// sandboxRealCLIs: the real CLIs run boxed (mode "on": no box, no run), each on both runners, reach the
// scripted model server on the host through the port the box forwards, and the run goes from the issue to its
// pull request with the usage read from the CLI's sessions in its home for the run (runRealCase checks it). The
// other real-CLI cases run boxed too, where boxes work (mode "auto"); this one fails where they do not.
func sandboxRealCLIs(t *testing.T, cs *realcli.Cases) {
	for _, cli := range []string{"claude", "codex", "gemini"} {
		pinned := realcli.Pinned(t, cli)
		c := pinned[len(pinned)-1] // the newest: TestRealCLIs runs the oldest boxed as well, where boxes work
		for _, runner := range []string{"tmux", "exec"} {
			cs.Run(c.Label()+"/"+runner, c, func(t *testing.T) {
				sandboxtest.Host(t)
				w, r := runRealCase(t, c, runner, "fix", "\n[sandbox]\nmode = \"on\"\n")
				u, err := url.Parse(w.srv.URL())
				if err != nil {
					t.Fatal(err)
				}
				ev := w.events(r)
				for _, want := range []string{c.Name + " runs boxed", "egress: reached CONNECT 127.0.0.1:" + u.Port()} {
					if !strings.Contains(ev, want) {
						t.Errorf("events lack %q:\n%s", want, ev)
					}
				}
				if b := r.State.Box; b == nil || b.Home == "" || !strings.HasPrefix(runbox.Line(r), "boxed") {
					t.Errorf("box state %+v", r.State.Box)
				}
			})
		}
	}
}

// TestSandboxProxyAfterRestart: a boxed agent outlives the ace that started it (waiting for a human's answer);
// the next ace serves its proxy again before any step of the run, and the agent, answered, reaches the network
// through it as before.
func TestSandboxProxyAfterRestart(t *testing.T) {
	t.Parallel()
	sandboxtest.Host(t)
	w := newWorld(t, "idle\n", nil)
	e := newEscapee(t, w)
	w.rescript(t, "question Formal or casual?\n"+e.script(), e.boxed(w.dir))
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusWaitingInput || r.State.Box == nil || r.State.Box.Proxy == "" {
		t.Fatalf("run %s at %s, box %+v: want a boxed agent waiting for an answer\n%s", r.Status, r.Step, r.State.Box, w.eventLog(r))
	}
	sock := r.State.Box.Proxy
	w.stopQueue()
	w.svc.Engine.Close() // the process ends: its proxies with it
	if c, err := net.Dial("unix", sock); err == nil {
		c.Close()
		t.Fatal("the proxy still answers after its ace ended")
	}
	w.open()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatalf("the restarted ace does not serve the box's proxy: %v", err)
	}
	c.Close()
	w.gh.AddComment(testRepo, testIssue, "alice", "Formal.")
	e.check(t, w, w.run(untilEnded))
}

// TestSandboxRepoWorkflow: the repository's setup and verify commands run in the run's box, as its agent does:
// they run the repository's code, which the agent may have written (a test of its own runs in verify). Setup
// cannot read the host's file nor ace's (that attempt recorded, as the agent's are) but writes the working copy
// and the dependency cache; verify passes; the run opens its pull request.
func TestSandboxRepoWorkflow(t *testing.T) {
	t.Parallel()
	sandboxtest.Host(t)
	w := newWorld(t, "idle\n", nil)
	e := newEscapee(t, w)
	e.setupRead = filepath.Join(e.root, "setup-canary.txt")
	if err := os.WriteFile(e.setupRead, []byte("host-secret-canary"), 0o600); err != nil {
		t.Fatal(err)
	}
	commitToRemote(t, w, map[string]string{
		".ace/workflow.toml": `setup = [["sh", "scripts/setup.sh"]]
verify = "sh scripts/verify.sh"
verify_timeout = "30s"
`,
		"scripts/setup.sh": fmt.Sprintf(`mkdir -p .ace
cat %s >/dev/null 2>&1 && echo "outside-file: ok" >> .ace/setup.txt || echo "outside-file: denied" >> .ace/setup.txt
cat %s >/dev/null 2>&1 && echo "ace-root: ok" >> .ace/setup.txt || echo "ace-root: denied" >> .ace/setup.txt
touch "$GOMODCACHE/installed-by-setup" && echo "cache: ok" >> .ace/setup.txt || echo "cache: denied" >> .ace/setup.txt
`, e.outside, e.setupRead),
		"scripts/verify.sh": "test -f GREETING.md\n",
	})
	w.rescript(t, e.script(), e.boxed(w.dir))
	r := w.run(workflow.UntilSettled)
	e.check(t, w, r)
	b, err := os.ReadFile(filepath.Join(r.Workdir, ".ace", "setup.txt"))
	if err != nil {
		t.Fatalf("setup's record: %v\n%s", err, w.eventLog(r))
	}
	if got, want := strings.TrimSpace(string(b)), "outside-file: denied\nace-root: denied\ncache: ok"; got != want {
		t.Errorf("setup in its box:\n%s\nwant:\n%s", got, want)
	}
	if prs := w.gh.PRs(testRepo); len(prs) != 1 || !strings.Contains(prs[0].Body, "Verified: `sh scripts/verify.sh` passed") {
		t.Errorf("pull requests %+v: want one, verified", prs)
	}
}
