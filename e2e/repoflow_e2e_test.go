package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// fixScript does the work in its first turn but forgets FIXED, which the repository's verify wants; it writes
// FIXED in its second turn (the verify round).
const fixScript = `busy 200ms
write GREETING.md Hello!\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
done Added GREETING.md.
busy 200ms
write FIXED yes\n
sh git add FIXED && git commit -q -m "Add FIXED"
done Added FIXED, which verify wanted.
`

const agentSecret = "fake-agent-secret-value-42" // FAKE_AGENT_KEY in the world's secret sources

// commitToRemote adds files to the remote's main branch, as a maintainer would.
func commitToRemote(t *testing.T, w *world, files map[string]string) {
	t.Helper()
	dir := filepath.Join(w.dir, "maintainer")
	gittest.Run(t, w.dir, "clone", "-q", w.remote, dir)
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gittest.Run(t, dir, "add", "-A")
	gittest.Run(t, dir, "commit", "-q", "-m", "workflow")
	gittest.Run(t, dir, "push", "-q", "origin", "HEAD:main")
}

func TestRepoWorkflowSetupAndVerifyRound(t *testing.T) {
	t.Parallel()
	w := newWorld(t, fixScript, func(c *config.Config) {
		// The operator grants the secret the repository's env file asks for.
		c.Repos = map[string]config.RepoWorkflow{testRepo: {Secrets: []string{"FAKE_AGENT_KEY"}}}
	})
	commitToRemote(t, w, map[string]string{
		".gitignore": ".deps/\n",
		".ace/workflow.toml": `setup = [["sh", "scripts/install.sh"]]
verify = "sh scripts/verify.sh"
verify_timeout = "30s"
labels = ["from-ace"]
template = "Keep {{.Title}} short (issue {{.Number}} of {{.Repo}})."
[env]
GREETING_MODE = "loud"
[[env_files]]
path = ".env"
secrets = ["FAKE_AGENT_KEY"]
`,
		// The "dependency": a tool installed into the working copy, with a mark in the shared module cache.
		"scripts/install.sh": `set -e
mkdir -p .deps
printf '#!/bin/sh\necho tool ok\n' > .deps/tool
chmod +x .deps/tool
touch "$GOMODCACHE/installed-by-setup"
echo "setup sees $(cat .env) in mode $GREETING_MODE"
`,
		"scripts/verify.sh": `cat .env
.deps/tool || exit 3
test -f FIXED || { echo "FIXED is missing"; exit 1; }
`,
	})

	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s", r.Status, r.Step, r.Error)
	}
	// Setup ran from the repository with the shared dependency cache.
	if _, err := os.Stat(filepath.Join(w.cfg.Workspace.Root, "cache", "deps", "acme", "widgets", "gomod", "installed-by-setup")); err != nil {
		t.Errorf("setup did not use the repository's dependency cache: %v", err)
	}
	// The agent got the failure in a second prompt and fixed it.
	prompts := w.prompts()
	if len(prompts) != 2 || !strings.Contains(prompts[1], "Verify round 1 of 3") || !strings.Contains(prompts[1], "FIXED is missing") {
		t.Fatalf("prompts %q: want the task, then a verify round naming the failure", prompts)
	}
	prs := w.gh.PRs(testRepo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	if !strings.Contains(prs[0].Body, "Verified: `sh scripts/verify.sh` passed") {
		t.Errorf("PR body does not say verified: %q", prs[0].Body)
	}
	if got := gittest.Run(t, w.remote, "show", r.Branch+":FIXED"); got != "yes" {
		t.Errorf("pushed FIXED = %q", got)
	}
	// The env file stayed out of git; the template reached ACE_TASK.md.
	if files := gittest.Run(t, w.remote, "ls-tree", "-r", "--name-only", r.Branch); strings.Contains(files, ".env") || strings.Contains(files, ".deps") {
		t.Errorf("the branch holds setup's files: %s", files)
	}
	task, err := os.ReadFile(filepath.Join(r.Workdir, "ACE_TASK.md"))
	if err != nil || !strings.Contains(string(task), "Keep Add a greeting short (issue 193 of acme/widgets).") {
		t.Errorf("ACE_TASK.md lacks the rendered template (%v):\n%s", err, task)
	}
	// The secret that setup and verify printed is masked in the log and reaches no comment, prompt or PR.
	logText, err := os.ReadFile(filepath.Join(w.cfg.Workspace.Root, "logs", tmuxops.SessionName(testRepo, testIssue)+".workflow.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"setup sees FAKE_AGENT_KEY=[redacted] in mode loud", "FIXED is missing", "tool ok"} {
		if !strings.Contains(string(logText), want) {
			t.Errorf("workflow log lacks %q:\n%s", want, logText)
		}
	}
	everything := string(logText) + strings.Join(prompts, "\n") + strings.Join(w.statusComments(), "\n") + prs[0].Body
	for _, c := range w.gh.Comments(testRepo, testIssue) {
		everything += c.Body
	}
	if strings.Contains(everything, agentSecret) {
		t.Error("a secret value reached the log, a prompt, a comment or the PR")
	}
}

func TestBadRepoWorkflowFailsBeforeAnyAgent(t *testing.T) {
	t.Parallel()
	w := newWorld(t, workScript, nil)
	commitToRemote(t, w, map[string]string{".ace/workflow.toml": "verify = \"make test\"\nverify_timout = \"1m\"\n"})

	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusFailed {
		t.Fatalf("run ended %s at %s, want failed", r.Status, r.Step)
	}
	status := w.statusComments()
	if len(status) != 1 || !strings.Contains(status[0], ".ace/workflow.toml:2: verify_timout: unknown key") {
		t.Fatalf("status comments %q: want the file:line error", status)
	}
	if r.Session != "" || w.sessionAlive() || len(w.prompts()) != 0 {
		t.Errorf("an agent was started (session %q, prompts %q)", r.Session, w.prompts())
	}
	if len(w.gh.PRs(testRepo)) != 0 {
		t.Error("a pull request was opened")
	}
}
