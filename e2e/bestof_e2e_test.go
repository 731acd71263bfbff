package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// bestOfScript works differently in each attempt's working copy (<issue>-<k>): attempt 1 changes one line and
// fails verify, attempt 2 changes six and passes it (it writes FIXED), attempt 3 changes seven and fails.
const bestOfScript = `busy 100ms
sh case "$PWD" in *-1) printf 'hi\n' > GREETING.md;; *-2) printf 'a\nb\nc\nd\ne\n' > GREETING.md; echo yes > FIXED;; *) printf 'a\nb\nc\nd\ne\nf\ng\n' > GREETING.md;; esac
sh git add -A && git commit -q -m "Add GREETING.md"
done Added GREETING.md.
`

// bestOfWorld is a headless world whose issue is worked best of three, with a verify that wants FIXED and no
// verify rounds (the failing attempts push as they are).
func bestOfWorld(t *testing.T, script string, tune func(*config.Config)) *world {
	t.Helper()
	w := newHeadlessWorld(t, "claude", script, func(c *config.Config) {
		// Each attempt's agent keeps its place in the script in its own working copy.
		a := c.Agents["fake"]
		a.Headless = strings.Replace(a.Headless, " headless ", " headless --state .ace/script.state ", 1)
		a.HeadlessResume = strings.Replace(a.HeadlessResume, " headless ", " headless --state .ace/script.state ", 1)
		c.Agents["fake"] = a
		bestOfThree(c, tune)
	})
	return withVerify(t, w)
}

// bestOfThree sets c for best of three with no verify rounds and no follow-through, then tunes it.
func bestOfThree(c *config.Config, tune func(*config.Config)) {
	c.Agent.Attempts = 3
	c.PR.Follow, c.PR.MaxRounds = false, 0
	if tune != nil {
		tune(c)
	}
}

// withVerify gives w's repository a verify command that wants FIXED.
func withVerify(t *testing.T, w *world) *world {
	t.Helper()
	commitToRemote(t, w, map[string]string{".ace/workflow.toml": `verify = "test -f FIXED"
verify_timeout = "30s"
`})
	return w
}

// TestBestOfThreeOpensOnePRFromThePassingAttempt: three attempts work the issue in three working copies; the one
// whose work passes verify wins although another changed less, and the one pull request comes from its branch,
// listing all three with what they spent.
func TestBestOfThreeOpensOnePRFromThePassingAttempt(t *testing.T) {
	t.Parallel()
	w := bestOfWorld(t, bestOfScript, nil)
	r := w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone {
		t.Fatalf("run ended %s at %s: %s\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
	}
	attempts := w.attempts(r)
	if len(attempts) != 3 {
		t.Fatalf("%d attempts, want 3", len(attempts))
	}
	var total store.Usage
	for k, a := range attempts {
		if a.Status != store.StatusDone || a.State.AttemptOf == nil || a.State.AttemptOf.K != k+1 || !a.State.AttemptOf.Pushed {
			t.Fatalf("attempt %d: %s at %s (%s), %+v\n%s", k+1, a.Status, a.Step, a.Error, a.State.AttemptOf, w.eventLog(a))
		}
		if a.PRNumber != 0 {
			t.Errorf("attempt %d opened pull request %d", k+1, a.PRNumber)
		}
		if a.State.Usage == nil || a.State.Usage.Tokens() == 0 {
			t.Fatalf("attempt %d spent nothing it recorded", k+1)
		}
		total.Add(*a.State.Usage)
		if got := gittest.Run(t, w.remote, "rev-parse", "--verify", "-q", a.Branch); got == "" {
			t.Errorf("attempt %d's branch %s was not pushed", k+1, a.Branch)
		}
	}
	prs := w.gh.PRs(testRepo)
	if len(prs) != 1 {
		t.Fatalf("%d pull requests, want 1", len(prs))
	}
	pr := prs[0]
	if pr.Head != attempts[1].Branch || r.Branch != attempts[1].Branch || r.State.BestOf.Winner != 2 {
		t.Fatalf("pull request from %s (run's branch %s, winner %d), want attempt 2's %s", pr.Head, r.Branch,
			r.State.BestOf.Winner, attempts[1].Branch)
	}
	for _, want := range []string{
		"## Best of 3", "| **2 (this pull request)** | fake | passed | 2 file(s), 6 line(s) |",
		"| 1 | fake | failed | 1 file(s), 1 line(s) |", "| 3 | fake | failed | 1 file(s), 7 line(s) |",
		"`" + attempts[0].Branch + "`", "`" + attempts[2].Branch + "`", "Verified: `test -f FIXED` passed",
		"All 3 attempts spent", "/" + testRepo + "/compare/main..." + attempts[2].Branch + ")",
	} {
		if !strings.Contains(pr.Body, want) {
			t.Errorf("pull request body lacks %q:\n%s", want, pr.Body)
		}
	}
	var judged store.Usage
	for _, res := range r.State.BestOf.Results {
		if res.Usage != nil {
			judged.Add(*res.Usage)
		}
	}
	if judged.Tokens() != total.Tokens() {
		t.Errorf("the parent counted %d tokens, its attempts spent %d", judged.Tokens(), total.Tokens())
	}
	if sc := w.statusComments(); len(sc) != 1 || !strings.Contains(sc[0], "| best of | 3 attempts (agent.attempts = 3); attempt 2 chosen: done, verify passed") {
		t.Errorf("status comments %q, want the parent's one naming the attempt chosen", sc)
	}
	if got := gittest.Run(t, w.remote, "show", pr.Head+":FIXED"); got != "yes" {
		t.Errorf("the pull request's branch holds FIXED = %q", got)
	}
}

// budgetScript: attempts 1 and 2 do their work and finish in their first turn (2's passes verify); attempt 3
// only thinks.
const budgetScript = `sh case "$PWD" in *-3) ;; *-2) echo a > GREETING.md; echo yes > FIXED; git add -A; git commit -qm w; echo Done. > .ace/DONE;; *) echo hi > GREETING.md; git add -A; git commit -qm w; echo Done. > .ace/DONE;; esac
idle
`

// TestBestOfInTmux: the attempts of the tmux runner run in sessions of their own beside each other, and the pull
// request comes from the one that passed verify.
func TestBestOfInTmux(t *testing.T) {
	t.Parallel()
	w := withVerify(t, newWorld(t, bestOfScript, func(c *config.Config) { bestOfThree(c, nil) }))
	r := w.run(workflow.UntilSettled)
	attempts := w.attempts(r)
	if r.Status != store.StatusDone || len(attempts) != 3 || r.State.BestOf.Winner != 2 {
		t.Fatalf("run %s (%s), %d attempts; want done from attempt 2\n%s", r.Status, r.Error, len(attempts), w.eventLog(r))
	}
	for k, a := range attempts {
		if want := tmuxops.SessionName(testRepo, testIssue) + fmt.Sprintf("-%d", k+1); a.Session != want {
			t.Errorf("attempt %d ran in session %q, want %q", k+1, a.Session, want)
		}
	}
	if prs := w.gh.PRs(testRepo); len(prs) != 1 || prs[0].Head != attempts[1].Branch {
		t.Fatalf("pull requests %+v, want one from attempt 2's branch", prs)
	}
}

// TestBestOfBudgetCountsEveryAttempt: budget.run bounds the attempts together. One at a time (one slot), the
// first two finish under the budget; the third reaches it at its first idle moment although it alone spent far
// less, because the three together did: it stops there, with no human asked, and the pull request comes from
// the best of the others.
func TestBestOfBudgetCountsEveryAttempt(t *testing.T) {
	t.Parallel()
	const budget = 130 // a turn of an attempt spends about 52 tokens here: one attempt is far below, three above
	w := bestOfWorld(t, budgetScript, func(c *config.Config) {
		c.Poll.MaxConcurrent = 1 // N attempts take N slots: one after another here
		c.Budget.Run.MaxTokens = budget
	})
	r := w.run(workflow.UntilSettled)
	attempts := w.attempts(r)
	if r.Status != store.StatusDone || len(attempts) != 3 || r.State.BestOf.Winner != 2 {
		t.Fatalf("run %s (%s), %d attempts, winner %d; want done from attempt 2\n%s", r.Status, r.Error, len(attempts),
			r.State.BestOf.Winner, w.eventLog(r))
	}
	third := attempts[2]
	if u := third.State.Usage; u == nil || u.Tokens() >= budget {
		t.Fatalf("attempt 3 spent %+v alone, want less than the budget (%d)", u, budget)
	}
	log := w.eventLog(third)
	if !strings.Contains(log, "the best-of attempts together spent") || third.Nudges != 0 {
		t.Errorf("attempt 3 (%s, %d nudges) did not stop at the attempts' budget:\n%s", third.Status, third.Nudges, log)
	}
	for _, c := range w.gh.Comments(testRepo, testIssue) {
		if strings.Contains(c.Body, "budget") && !strings.Contains(c.Body, workflow.StatusMarker) {
			t.Errorf("a human was asked about the budget: %s", c.Body)
		}
	}
}

// attempts are the best-of attempts of parent r, in order of k.
func (w *world) attempts(r *store.Run) []*store.Run {
	w.t.Helper()
	runs, err := w.svc.Store.ListRuns(context.Background(), store.Filter{Repo: r.Repo, Issue: r.Issue})
	if err != nil {
		w.t.Fatal(err)
	}
	var out []*store.Run
	for k := 1; k <= 9; k++ {
		for _, a := range runs {
			if a.Attempt == store.AttemptNumber(r.Attempt, k) {
				out = append(out, a)
			}
		}
	}
	return out
}

// TestBestOfResumesAfterRestart: an ace:best-of-3 label asks for three attempts (agent.attempts is 1); ace ends
// while they work and a new ace takes over: the attempts go on where they were, none is started twice, and the
// one pull request opens from attempt 2.
func TestBestOfResumesAfterRestart(t *testing.T) {
	t.Parallel()
	w := bestOfWorld(t, "busy 1s\n"+bestOfScript, func(c *config.Config) { c.Agent.Attempts = 1 })
	w.gh.Label(testRepo, testIssue, "ace:best-of-3", "alice")
	working := func(r *store.Run) bool {
		return r.Status.Terminal() || r.State.BestOf != nil && len(r.State.BestOf.Attempts) == 3
	}
	r := w.run(working)
	if r.Status.Terminal() {
		t.Fatalf("run ended %s before ace was restarted: %s", r.Status, r.Error)
	}
	w.stopQueue()
	for _, a := range w.attempts(r) {
		if a.Status.Terminal() {
			t.Fatalf("attempt %d ended before ace was restarted", a.State.AttemptOf.K)
		}
	}
	w.open() // the first ace ends between two steps; a new one works the same store
	r = w.run(workflow.UntilSettled)
	if r.Status != store.StatusDone || r.State.BestOf.Winner != 2 || r.State.BestOf.Why != "label ace:best-of-3" {
		t.Fatalf("after the restart: %s (%s), winner %d\n%s", r.Status, r.Error, r.State.BestOf.Winner, w.eventLog(r))
	}
	runs, err := w.svc.Store.ListRuns(t.Context(), store.Filter{Repo: testRepo, Issue: testIssue})
	if err != nil || len(runs) != 4 {
		t.Fatalf("%d runs of the issue (%v), want the parent and its 3 attempts", len(runs), err)
	}
	if prs := w.gh.PRs(testRepo); len(prs) != 1 || prs[0].Head != w.attempts(r)[1].Branch {
		t.Fatalf("pull requests %+v, want one from attempt 2's branch", prs)
	}
	if turns := w.turns(); len(turns) != 3 {
		t.Errorf("%d turns of the agents, want one per attempt: %+v", len(turns), turns)
	}
}

// TestBestOfStopEndsEveryAttempt: ace stop on a best-of issue stops the parent and each attempt's agent with it.
func TestBestOfStopEndsEveryAttempt(t *testing.T) {
	t.Parallel()
	w := bestOfWorld(t, "busy 60s\n"+bestOfScript, nil)
	r := w.run(func(r *store.Run) bool {
		if r.Status.Terminal() || r.State.BestOf == nil || len(r.State.BestOf.Attempts) < 3 {
			return r.Status.Terminal()
		}
		for _, a := range w.attempts(r) {
			if workflow.Step(a.Step) != workflow.StepMonitor {
				return false
			}
		}
		return true
	})
	if r.Status.Terminal() {
		t.Fatalf("run ended %s before the stop: %s", r.Status, r.Error)
	}
	if err := w.svc.Engine.Stop(context.Background(), r, "stopped by hand"); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, "every attempt cancelled", 30*time.Second, func() bool {
		for _, a := range w.attempts(r) {
			if a.Status != store.StatusCancelled {
				return false
			}
		}
		return true
	})
	if r, _ = w.svc.Store.GetRun(context.Background(), r.ID); r.Status != store.StatusCancelled {
		t.Errorf("parent %s, want cancelled", r.Status)
	}
	if prs := w.gh.PRs(testRepo); len(prs) != 0 {
		t.Errorf("%d pull requests after the stop, want none", len(prs))
	}
}

// TestBestOfPullRequestIsFollowed: the pull request a best-of run opens from its winner is followed like any
// run's: a reviewer's change request reaches the winning attempt's working copy and agent, whose fix is pushed to
// the pull request's branch. Every attempt passes verify; attempt 1, the smallest, wins.
func TestBestOfPullRequestIsFollowed(t *testing.T) {
	t.Parallel()
	out := t.TempDir()
	script := fmt.Sprintf(`busy 100ms
sh case "$PWD" in *-1) printf 'hi\n' > GREETING.md;; *) printf 'a\nb\nc\n' > GREETING.md;; esac; echo yes > FIXED
sh git add -A && git commit -q -m "Add GREETING.md"
done Added GREETING.md.
busy 100ms
sh cp .ace/FOLLOWUP.md %[1]s/followup.md; basename "$PWD" > %[1]s/where.txt
write GREETING.md Hello!\n
sh git commit -q -am "Capitalize the greeting"
done Capitalized as asked in review.
`, out)
	w := bestOfWorld(t, script, func(c *config.Config) { c.PR.Follow, c.PR.MaxRounds = true, 2 })
	w.gh.SetGitDir(testRepo, w.remote)
	w.gh.SetPermission(testRepo, "carol", "write")
	r := w.run(workflow.UntilSettled)
	if r.Step != string(workflow.StepFollowPR) || r.Status != store.StatusActive || r.PRNumber == 0 {
		t.Fatalf("after the PR opened the run is %s at %s (%s), want active at follow_pr\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
	}
	sha1 := w.gh.HeadSHA(testRepo, r.PRNumber)
	w.gh.AddReview(testRepo, r.PRNumber, "carol", "CHANGES_REQUESTED", "One nit.", fakegithub.LineComment{Path: "GREETING.md", Line: 1,
		Body: "Capitalize it and add an exclamation mark", DiffHunk: "@@ -0,0 +1 @@\n+hi"})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := w.svc.Engine.Follow(ctx, r, func(r *store.Run) bool { return roundDone(r, 1) }); err != nil || !roundDone(r, 1) {
		t.Fatalf("waiting for the review round: %v (run %s at %s: %s, follow %+v)\n%s", err, r.Status, r.Step, r.Error, r.State.Follow,
			w.eventLog(r))
	}
	if r.State.BestOf.Winner != 1 {
		t.Fatalf("attempt %d won, want 1 (the smallest that passed)", r.State.BestOf.Winner)
	}
	if where := strings.TrimSpace(readFile(t, filepath.Join(out, "where.txt"))); where != fmt.Sprintf("%d-1", r.Issue) {
		t.Errorf("the review round ran in %q, want the winner's working copy %d-1", where, r.Issue)
	}
	if d := readFile(t, filepath.Join(out, "followup.md")); !strings.Contains(d, "Capitalize it and add an exclamation mark") {
		t.Errorf("FOLLOWUP.md lacks the review comment:\n%s", d)
	}
	pr := w.gh.PRs(testRepo)[0]
	if sha2 := w.gh.HeadSHA(testRepo, r.PRNumber); sha2 == sha1 || pr.Head != r.Branch {
		t.Errorf("the fix was not pushed to the pull request's branch %s (head %s, was %s)", pr.Head, sha2, sha1)
	}
	if got := gittest.Run(t, w.remote, "show", pr.Head+":GREETING.md"); got != "Hello!" {
		t.Errorf("the pull request's GREETING.md is %q after the review round", got)
	}
	if log := w.eventLog(r); strings.Contains(log, "a new agent starts the round") || !strings.Contains(log, "resumed conversation") {
		t.Errorf("the round did not resume the winner's conversation:\n%s", log)
	}

	// The merge ends the run, and removes the copy it worked in, the winner's.
	copyDir := r.Workdir
	w.gh.MergePR(testRepo, r.PRNumber)
	if err := w.svc.Engine.Follow(ctx, r, func(r *store.Run) bool { return r.Status.Terminal() }); err != nil || r.Status != store.StatusDone {
		t.Fatalf("after the merge: %v, run %s at %s: %s", err, r.Status, r.Step, r.Error)
	}
	if _, err := os.Stat(copyDir); !os.IsNotExist(err) {
		t.Errorf("the winner's working copy %s is still there (%v)", copyDir, err)
	}
}

// TestBestOfAsksTheHumanOnce: each of three attempts' agents asks the human a question before it works; the issue
// gets one question, not three, and the one answer reaches every attempt that asked — the next turn of each is the
// answer, byte-exact — after which they work and the pull request comes from the one that passed verify.
func TestBestOfAsksTheHumanOnce(t *testing.T) {
	t.Parallel()
	// The third attempt's agent asks something else: the one comment shows both questions, the same one once.
	ask := `sh mkdir -p .ace && case "$PWD" in *-3) echo 'Should it rhyme?';; *) echo 'Should the greeting be formal or casual?';; esac > .ace/QUESTION` + "\n---\n"
	w := bestOfWorld(t, ask+bestOfScript, nil)
	allAsked := func(r *store.Run) bool {
		as := w.attempts(r)
		for _, a := range as {
			if a.Status != store.StatusWaitingInput {
				return false
			}
		}
		return len(as) == 3
	}
	r := w.run(allAsked)
	if !allAsked(r) {
		t.Fatalf("run %s at %s (%s): its attempts did not all wait for an answer\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
	}
	questions := func() (n int) {
		for _, c := range w.gh.Comments(testRepo, testIssue) {
			if strings.Contains(c.Body, "<!-- ace:question:") {
				n++
			}
		}
		return n
	}
	if n := questions(); n != 1 {
		t.Fatalf("%d question comments on the issue, want 1 for the three attempts", n)
	}
	for _, c := range w.gh.Comments(testRepo, testIssue) {
		if !strings.Contains(c.Body, "<!-- ace:question:") {
			continue
		}
		if n := strings.Count(c.Body, "formal or casual"); n != 1 || !strings.Contains(c.Body, "Should it rhyme?") {
			t.Errorf("the question comment shows the first question %d times (want once) and the third attempt's "+
				"own question %v:\n%s", n, strings.Contains(c.Body, "Should it rhyme?"), c.Body)
		}
	}
	answer := "Formal, please."
	w.gh.AddComment(testRepo, testIssue, "alice", answer)
	r = w.run(untilEnded)
	attempts := w.attempts(r)
	if r.Status != store.StatusDone || len(attempts) != 3 || r.State.BestOf.Winner != 2 {
		t.Fatalf("run %s (%s), %d attempts; want done from attempt 2\n%s", r.Status, r.Error, len(attempts), w.eventLog(r))
	}
	answered := 0
	for _, tr := range w.turns() {
		if tr.Prompt == answer {
			answered++
		}
	}
	if answered != 3 {
		t.Errorf("%d turns were the answer, want one in each of the 3 attempts", answered)
	}
	for k, a := range attempts {
		if log := w.eventLog(a); !strings.Contains(log, "answer from @alice") {
			t.Errorf("attempt %d got no answer:\n%s", k+1, log)
		}
	}
	if n := questions(); n != 1 {
		t.Errorf("%d question comments on the issue in the end, want 1", n)
	}
}
