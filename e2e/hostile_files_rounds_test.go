package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// TestHostileFilesInRounds: for a link and a hard link to the secret, at each file ace writes into a working
// copy or an agent's home while a run goes on — .ace/VERIFY.md (a verify round), .ace/FOLLOWUP.md (a review
// round), the CLI's settings in its home for the run and the working copy's .mcp.json (a restart) — ace never
// writes through what the agent left: the secret stays as it was, ace's file takes the link's place, and a file
// ace must merge into (the settings) is refused and ends the run with an event saying what was there.
//
// Per attack one ace (pull requests followed, a verify that fails once, claude's GitHub MCP server) works three
// issues at once: #204 goes through a verify round and a review round; #205 and #206 crash after the agent left
// the attack at its settings file (#205) or at .mcp.json (#206), and ace starts them again.
func TestHostileFilesInRounds(t *testing.T) {
	t.Parallel()
	for _, a := range []attack{symlinkAttack, hardlinkAttack} {
		t.Run(string(a), func(t *testing.T) {
			t.Parallel()
			h := newHostile(t, a, func(c *config.Config) {
				c.PR.Follow = true
				c.Repos = map[string]config.RepoWorkflow{testRepo: {
					Verify: config.Command{"sh", "-c", `test -e .ace/verified || { touch .ace/verified; echo "GREETING.md needs a test"; exit 1; }`}}}
				a := c.Agents["claude"]
				a.GitHubMCP = "https://api.githubcopilot.com/mcp/"
				c.Agents["claude"] = a
			})
			h.gh.SetGitDir(testRepo, h.remote)
			h.roundCases()
		})
	}
}

// roundTargets are the files #204's agent leaves the attack at, each written by ace in a round.
var roundTargets = []string{".ace/VERIFY.md", ".ace/FOLLOWUP.md"}

func (h *hostile) roundCases() {
	t := h.t
	var plants strings.Builder
	for _, p := range roundTargets {
		plants.WriteString(h.plant(p))
	}
	h.issue(204, work+plants.String()+"sh touch .ace/planted\nidle\n"+
		"sh cat .ace/VERIFY.md > .ace/verify-seen.txt\ndone Added a test, as verify wanted.\n"+
		"sh cat .ace/FOLLOWUP.md > .ace/followup-seen.txt\ndone Reviewed.\n")
	crash := "sh touch .ace/planted; while ! test -e .ace/left; do sleep 0.05; done; kill -9 $PPID\n"
	h.issue(205, work+h.plant(`"$CLAUDE_CONFIG_DIR/.claude.json"`)+crash+"done Restarted.\n")
	h.issue(206, work+h.plant(".mcp.json")+crash+"done Restarted.\n")
	r204, r205, r206 := h.start(204), h.start(205), h.start(206)

	// #205, #206: the attack at the file, then the crash; the restart must not write through it.
	r205 = h.planted(r205)
	h.leave(filepath.Join(r205.State.Box.Home, ".claude", ".claude.json"))
	writeFileMode(t, filepath.Join(r205.Workdir, ".ace", "left"), "", 0o644)
	r206 = h.planted(r206)
	h.leave(filepath.Join(r206.Workdir, ".mcp.json"))
	writeFileMode(t, filepath.Join(r206.Workdir, ".ace", "left"), "", 0o644)

	// #204: the attack at each file, then the work is done: verify fails once (VERIFY.md), and a review asks for
	// a round (FOLLOWUP.md).
	r204 = h.planted(r204)
	for _, p := range roundTargets {
		h.leave(filepath.Join(r204.Workdir, filepath.FromSlash(p)))
	}
	writeFileMode(t, filepath.Join(r204.Workdir, ".ace", "DONE"), "Added GREETING.md.\n", 0o644)
	r204 = h.follow(r204, runWithin, workflow.UntilSettled)
	if r204.Step != string(workflow.StepFollowPR) || r204.PRNumber == 0 {
		t.Fatalf("#204 is %s at %s (%s), want its pull request followed\n%s", r204.Status, r204.Step, r204.Error, h.eventLog(r204))
	}
	h.gh.AddReview(testRepo, r204.PRNumber, "alice", "CHANGES_REQUESTED", "Please say hello in French too.")
	r204 = h.follow(r204, runWithin, func(r *store.Run) bool { return roundDone(r, 1) })
	for name, want := range map[string]string{"verify-seen.txt": "# Verify failed", "followup-seen.txt": "Please say hello in French too."} {
		if b, err := os.ReadFile(filepath.Join(r204.Workdir, ".ace", name)); err != nil || !strings.Contains(string(b), want) {
			t.Errorf("#204's agent saw %q in ace's file (%v), want %q", b, err, want)
		}
	}
	for _, p := range roundTargets {
		h.aceWrote(filepath.Join(r204.Workdir, filepath.FromSlash(p)))
	}

	// #205, #206: the restart refused the settings ace merges into, and ended the run saying so.
	for _, c := range []struct {
		r    *store.Run
		path string
	}{{r205, ".claude/.claude.json"}, {r206, ".mcp.json"}} {
		r := h.follow(c.r, runWithin, untilEnded)
		if r.Status != store.StatusFailed || !strings.Contains(r.Error, "refused "+c.path+": ") {
			t.Errorf("#%d ended %s (%s), want failed on the refused %s\n%s", r.Issue, r.Status, r.Error, c.path, h.eventLog(r))
		}
		h.refused(r, c.path)
		h.attempts(r)
	}
	h.attempts(r204)
	h.secretNowhere()
}

// aceWrote asserts that the file at path is ace's own now: a regular file of one name, not the secret.
func (h *hostile) aceWrote(path string) {
	h.t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		h.t.Errorf("%s: %v", path, err)
		return
	}
	st, _ := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || st == nil || st.Nlink != 1 {
		h.t.Errorf("%s is %v with %v names, want a file of ace's own", path, fi.Mode(), st.Nlink)
	}
	if holds(h.t, path, h.secret) {
		h.t.Errorf("%s holds the secret", path)
	}
}
