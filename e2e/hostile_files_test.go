package e2e_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/pkg/memory"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// runWithin bounds each run of the suite: a guard that waited on a file would hold a run far longer.
const runWithin = 60 * time.Second

// work is the agent's honest part: a commit ace can push.
const work = `busy 200ms
write GREETING.md Hello!\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
`

// TestHostileFiles: for each attack, at each file ace reads from a working copy or an agent's home — the
// done protocol's .ace/DONE and .ace/QUESTION, the memory's copy of AGENTS.md and its baseline, the context file
// ace points at the memory from (CLAUDE.md), ace's exclude file, the CLI's session files it reads usage from —
// ace refuses the file with an event saying what it found, goes on without it (a refused .ace/DONE still ends
// the work, a refused .ace/QUESTION still reaches a human), never waits on it, never holds it, and the secret
// reaches neither GitHub, the store, the memory, a pushed commit nor another run's working copy. A link or a hard
// link at each file ace writes when it prepares a working copy an agent has been in (ACE_TASK.md, the memory's
// copies and baseline) is replaced by ace's file, never written through.
//
// Per attack one ace works these issues at once: #201 leaves the attack at .ace/DONE, AGENTS.md and its session
// file; #202 at .ace/QUESTION, the baseline and CLAUDE.md (apart from #201: a refused copy of AGENTS.md ends the
// merge before the baseline is read, and a question waits for its answer); #203 at the exclude file, which git
// reads too (a link or a hard link only: git itself would wait on a FIFO there, or read a huge one whole —
// git's own reads are issue #35's git side); #207 (a link or a hard link) at the files a second attempt in the
// same working copy has ace write.
func TestHostileFiles(t *testing.T) {
	t.Parallel()
	for _, a := range []attack{symlinkAttack, hardlinkAttack, fifoAttack, deviceAttack, hugeAttack} {
		t.Run(string(a), func(t *testing.T) {
			t.Parallel()
			h := newHostile(t, a, nil)
			h.readCases()
		})
	}
}

func (h *hostile) readCases() {
	t := h.t
	withDone := ""
	if h.attack.boxMakes() {
		withDone = h.plant(".ace/DONE")
	}
	withQuestion := ""
	if h.attack.boxMakes() {
		withQuestion = h.plant(".ace/QUESTION")
	}
	session := `sh mkdir -p "$CLAUDE_CONFIG_DIR/projects/$(pwd | sed 's/[^A-Za-z0-9]/-/g')"` + "\n"
	inBox, _ := h.sessionFile(&store.Run{})
	h.issue(201, work+session+h.plant(".ace/memory/AGENTS.md")+h.plant(inBox)+withDone+"sh touch .ace/planted\nidle\n")
	h.issue(202, work+"sh echo '- a note from #202' >> .ace/memory/AGENTS.md\n"+h.plant(".git/ace-memory-baseline.md")+
		h.plant("CLAUDE.md")+withQuestion+"sh touch .ace/planted\nidle\ndone Finished after the answer.\n")
	excludes := h.attack == symlinkAttack || h.attack == hardlinkAttack
	if excludes {
		h.issue(203, work+"sh printf '# Notes of my own\\n' > CLAUDE.md\n"+h.plant(".git/ace/exclude")+"sh touch .ace/planted\nidle\n")
		var plants strings.Builder
		for _, p := range prepareTargets {
			plants.WriteString(h.plant(p))
		}
		h.issue(207, work+plants.String()+"sh touch .ace/planted\nidle\n", "idle\n")
	}
	r201, r202 := h.start(201), h.start(202)
	var r203, r207 *store.Run
	if excludes {
		r203, r207 = h.start(203), h.start(207)
	}

	// #201: what the box could not make is made on the host once the agent has left the rest; .ace/DONE last.
	r201 = h.planted(r201)
	_, sessionOnHost := h.sessionFile(r201)
	for _, p := range []string{filepath.Join(r201.Workdir, ".ace", "memory", "AGENTS.md"), sessionOnHost, filepath.Join(r201.Workdir, ".ace", "DONE")} {
		h.leave(p)
	}
	// #202: likewise, .ace/QUESTION last.
	r202 = h.planted(r202)
	for _, p := range []string{".git/ace-memory-baseline.md", "CLAUDE.md", ".ace/QUESTION"} {
		h.leave(filepath.Join(r202.Workdir, filepath.FromSlash(p)))
	}
	if excludes {
		r203 = h.planted(r203)
		h.leave(filepath.Join(r203.Workdir, ".git", "ace", "exclude"))
		writeFileMode(t, filepath.Join(r203.Workdir, ".ace", "DONE"), "Added GREETING.md.\n", 0o644)
	}

	// #201 ends: its .ace/DONE refused, its work in a pull request whose summary says so.
	r201 = h.follow(r201, runWithin, untilEnded)
	if r201.Status != store.StatusDone || r201.PRNumber == 0 {
		t.Fatalf("#201 ended %s at %s (%s), want done with a pull request\n%s", r201.Status, r201.Step, r201.Error, h.eventLog(r201))
	}
	sessionRel, _ := filepath.Rel(r201.State.Box.Home, sessionOnHost)
	for _, p := range []string{".ace/DONE", ".ace/memory/AGENTS.md", sessionRel} {
		h.refused(r201, p)
	}
	if body := h.prBody(r201); !strings.Contains(body, "ace did not read .ace/DONE") {
		t.Errorf("#201's pull request does not say its summary was refused:\n%s", body)
	}
	if status := h.statusComment(201); !strings.Contains(status, "| files | `refused .ace/DONE: ") {
		t.Errorf("#201's status comment has no row of the files refused:\n%s", status)
	}

	// #202 asks a human what ace found instead of its question; the answer gets it going; it ends.
	r202 = h.follow(r202, runWithin, workflow.UntilSettled)
	if r202.Status != store.StatusWaitingInput {
		t.Fatalf("#202 is %s at %s (%s), want waiting for a human\n%s", r202.Status, r202.Step, r202.Error, h.eventLog(r202))
	}
	asked := slices.ContainsFunc(h.gh.Comments(testRepo, 202), func(c fakegithub.Comment) bool {
		return strings.Contains(c.Body, "ace did not read .ace/QUESTION: refused .ace/QUESTION: "+h.attack.found(h.secretPath))
	})
	if !asked {
		t.Errorf("#202's question on the issue does not say what ace refused")
	}
	h.gh.AddComment(testRepo, 202, "alice", "Go on.")
	r202 = h.follow(r202, runWithin, untilEnded)
	if r202.Status != store.StatusDone {
		t.Fatalf("#202 ended %s at %s: %s\n%s", r202.Status, r202.Step, r202.Error, h.eventLog(r202))
	}
	for _, p := range []string{".ace/QUESTION", ".git/ace-memory-baseline.md", "CLAUDE.md"} {
		h.refused(r202, p)
	}
	// The refused CLAUDE.md stays ace's: excluded, never committed.
	if out := gittest.Run(t, h.remote, "ls-tree", "-r", "--name-only", r202.Branch); strings.Contains(out, "CLAUDE.md") {
		t.Errorf("#202's branch holds the refused CLAUDE.md:\n%s", out)
	}

	if excludes {
		r203 = h.follow(r203, runWithin, untilEnded)
		if r203.Status != store.StatusDone {
			t.Fatalf("#203 ended %s at %s: %s\n%s", r203.Status, r203.Step, r203.Error, h.eventLog(r203))
		}
		h.refused(r203, ".git/ace/exclude")
		r207 = h.secondAttempt(r207)
	}

	if h.attack == symlinkAttack {
		// The issue's own attack: a link at AGENTS.md. The next run's working copy gets the memory, not the key.
		h.issue(210, work+"done Added GREETING.md.\n")
		next := h.follow(h.start(210), runWithin, untilEnded)
		if b, err := os.ReadFile(filepath.Join(next.Workdir, filepath.FromSlash(memory.AgentsCopy))); err != nil || strings.Contains(string(b), h.secret) {
			t.Errorf("the next run's copy of AGENTS.md: %q, %v", b, err)
		}
	}
	for _, r := range []*store.Run{r201, r202, r203, r207} {
		if r != nil {
			h.attempts(r)
		}
	}
	h.secretNowhere()
	if h.attack == hugeAttack {
		boundedMemory(t)
	}
}

// prBody is the body of r's pull request.
func (h *hostile) prBody(r *store.Run) string {
	for _, pr := range h.gh.PRs(testRepo) {
		if pr.Number == r.PRNumber {
			return pr.Body
		}
	}
	return ""
}

// statusComment is ace's status comment on issue n.
func (h *hostile) statusComment(n int) string {
	for _, c := range h.gh.Comments(testRepo, n) {
		if strings.Contains(c.Body, workflow.StatusMarker) {
			return c.Body
		}
	}
	return ""
}

// prepareTargets are the files #207's agent leaves the attack at, which ace writes when it prepares the working
// copy for the next attempt.
var prepareTargets = []string{"ACE_TASK.md", ".ace/memory/status.md", ".ace/memory/AGENTS.md", ".git/ace-memory-baseline.md"}

// secondAttempt has #207's agent leave the attack at each of prepareTargets, finishes the run, and prepares the
// same working copy for a second attempt: ace's files take the attack's places.
func (h *hostile) secondAttempt(r *store.Run) *store.Run {
	t := h.t
	r = h.planted(r)
	for _, p := range prepareTargets {
		h.leave(filepath.Join(r.Workdir, filepath.FromSlash(p)))
	}
	writeFileMode(t, filepath.Join(r.Workdir, ".ace", "DONE"), "Added GREETING.md.\n", 0o644)
	r = h.follow(r, runWithin, untilEnded)
	if r.Status != store.StatusDone {
		t.Fatalf("#207 ended %s at %s: %s\n%s", r.Status, r.Step, r.Error, h.eventLog(r))
	}
	h.refused(r, ".ace/memory/AGENTS.md") // merged back at the end: read, never written through
	writeFileMode(t, filepath.Join(r.Workdir, ".ace", "second-attempt"), "", 0o644)
	second := h.follow(h.start(207), runWithin, func(r *store.Run) bool { return r.State.PromptDelivered })
	if second.Workdir != r.Workdir || second.Attempt != 2 {
		t.Fatalf("attempt %d works in %s, want attempt 2 in the first's %s", second.Attempt, second.Workdir, r.Workdir)
	}
	for _, p := range prepareTargets {
		h.aceWrote(filepath.Join(second.Workdir, filepath.FromSlash(p)))
	}
	if b, _ := os.ReadFile(filepath.Join(second.Workdir, "ACE_TASK.md")); !strings.Contains(string(b), "# Task: acme/widgets#207") {
		t.Errorf("ACE_TASK.md of the second attempt:\n%s", b)
	}
	return second
}
