package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/evaltest"
	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/internal/testkit/acetest"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/headless"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/tmuxops"
)

// evalWorld is a repository with a history (evaltest), a task set made from two of its merged pull requests,
// and an ace.toml whose agents are the fake agent, boxed, each with a script of its own: fixer applies the true
// fix, wrong asks a question first (the answer is "decide yourself") and writes a stub, thief tries every way
// the box leaves to read the future and applies the fix if it finds it.
type evalWorld struct {
	w             *evaltest.World
	dir, cfg      string
	tasks, evalIn string
	socket        string
	scripts       string            // the agents' scripts, which the boxes see read-only
	fixes         map[string]string // instance id → the fixed file's path
}

func newEvalWorld(t *testing.T) *evalWorld {
	t.Helper()
	dir := t.TempDir()
	scripts := t.TempDir() // what the boxes see of the test: the agents' scripts, nothing of ace's root
	w := evaltest.New(t, dir)
	ew := &evalWorld{w: w, dir: dir, tasks: filepath.Join(dir, "tasks.jsonl"), evalIn: filepath.Join(dir, "eval"),
		socket: "ace-test-" + acetest.RandomHex(4), scripts: scripts, fixes: map[string]string{}}
	var tasks []eval.Task
	var fix, future, merges strings.Builder
	fix.WriteString("#!/bin/sh\n")
	for _, m := range w.Merges {
		fmt.Fprintf(&merges, " %s", m.Commit)
	}
	for _, i := range []int{1, 4} { // "Add mul", "Add neg"
		m := w.Merges[i]
		if m.Want != evaltest.Kept {
			t.Fatalf("PR #%d is %s, want a kept one", m.PR, m.Want)
		}
		diff := func(path string) string {
			return gittest.Run(t, w.Remote, "diff", "--binary", "--full-index", "--no-renames", m.Base, m.Commit, "--", path) + "\n"
		}
		id := fmt.Sprintf("acme__calc-%d", m.PR)
		test := strings.TrimSpace(gittest.Run(t, w.Remote, "diff", "--name-only", m.Base, m.Commit, "--", "tests"))
		tasks = append(tasks, eval.Task{InstanceID: id, Repo: evaltest.Repo, BaseCommit: m.Base, Patch: diff("lib"),
			TestPatch: diff("tests"), ProblemStatement: w.Statements[m.PR], CreatedAt: time.Now().UTC(), Source: eval.SourcePR,
			PR: m.PR, MergeCommit: m.Commit, TestFiles: []string{test}, Check: []string{"sh", "run-tests.sh"},
			CheckFrom: eval.CheckFromVerify, CheckTimeoutSeconds: 60})
		_, body, _ := strings.Cut(w.Statements[m.PR], "\n")
		// The future of this task: its merge and every one after, with their pull requests' commits.
		fmt.Fprintf(&future, "grep -qF %q ACE_TASK.md && FUTURE='", strings.TrimSpace(body))
		for _, later := range w.Merges[i:] {
			fmt.Fprintf(&future, " %s %s", later.Commit, gittest.Run(t, w.Remote, "rev-parse", later.Commit+"^2"))
		}
		future.WriteString("'\n")
		fmt.Fprintf(&fix, "if grep -qF %q ACE_TASK.md; then git apply <<'ACE_EOF'\n%sACE_EOF\nfi\n", strings.TrimSpace(body), diff("lib"))
		ew.fixes[id] = strings.TrimSpace(gittest.Run(t, w.Remote, "diff", "--name-only", m.Base, m.Commit, "--", "lib"))
	}
	if err := eval.WriteTasks(ew.tasks, tasks); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "root")
	realMirror := filepath.Join(root, "mirrors", "acme", "calc.git")
	// The thief: everything it finds goes into stolen.txt, which its work carries; a LEAK line is a find.
	steal := "#!/bin/sh\n" + future.String() + "MERGES='" + merges.String() + "'\n" +
		"[ -n \"$FUTURE\" ] || echo 'LEAK: no task found'\n" +
		"grep -qF '" + evaltest.LaterWorkflow + "' ACE_TASK.md && echo 'LEAK: the workflow file from after the base'\n" +
		"echo '== log --all'; git log --all --format='%H %s'\n" +
		"echo '== rev-list --all --reflog'; git rev-list --all --reflog --objects\n" +
		"echo '== fetch'; git fetch -q origin '+refs/*:refs/stolen/*'; git fetch -q mirror '+refs/*:refs/stolen2/*'\n" +
		"for s in $FUTURE; do git cat-file -e $s 2>/dev/null && echo \"LEAK: cat-file $s\"; done\n" +
		"prune='( -path /proc -o -path /sys -o -path /dev ) -prune -o'\n" +
		"find / $prune \\( -name '*.pack' -o -name HEAD \\) -print 2>/dev/null > /tmp/found\n" +
		"echo '== packs'; grep '\\.pack$' /tmp/found | while read p; do echo \"$p\"; for s in $FUTURE; do " +
		"git show-index < \"${p%.pack}.idx\" 2>/dev/null | grep -q $s && echo \"LEAK: $s in $p\"; done; done\n" +
		"echo '== repositories'; grep '/HEAD$' /tmp/found | while read h; do d=$(dirname \"$h\"); echo \"$d\"; " +
		"for s in $FUTURE; do git --git-dir \"$d\" cat-file -e $s 2>/dev/null && echo \"LEAK: $s in $d\"; done; done\n" +
		"for s in $FUTURE; do git --git-dir '" + realMirror + "' cat-file -e $s 2>/dev/null && echo \"LEAK: $s in ace's mirror\"; done\n" +
		"cat '" + ew.tasks + "' >/dev/null 2>&1 && echo 'LEAK: the task set'\n" +
		"cat '" + ew.evalIn + "'/results/*.json >/dev/null 2>&1 && echo 'LEAK: the other runs results'\n" +
		// The box makes the directories above the working copy it shows, empty but for the way down to it.
		"[ \"$(ls '" + ew.evalIn + "/items' 2>/dev/null | wc -l)\" -gt 1 ] && echo 'LEAK: the other runs working copies'\n" +
		"for m in $MERGES; do git diff $m^1 $m -- lib 2>/dev/null | git apply 2>/dev/null && echo \"LEAK: applied $m\"; done\n" +
		"echo '== end'\n"
	files := map[string]string{
		"fix.sh":      fix.String(),
		"steal.sh":    steal,
		"fixer.txt":   "sh sh " + filepath.Join(scripts, "fix.sh") + "\ndone applied the fix\n",
		"wrong.txt":   "question Shall I write the real thing or a stub?\nwrite lib/stub.sh stub() { :; }\\n\ndone wrote a stub\n",
		"thief.txt":   "sh sh " + filepath.Join(scripts, "steal.sh") + " > stolen.txt 2>&1\ndone looked everywhere\n",
		"spender.txt": "write lib/half.sh half() { :; }\\n\nidle\n",
		"README.txt":  "the eval test's agent scripts\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(scripts, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	folder := filepath.Join(dir, "tracker")
	if err := os.MkdirAll(filepath.Join(folder, "issues"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "repo.toml"), []byte(fmt.Sprintf("name = %q\nremote = %q\n", evaltest.Repo, w.Remote)), 0o644); err != nil {
		t.Fatal(err)
	}
	var agents strings.Builder
	for _, a := range []string{"fixer", "wrong", "thief", "spender"} {
		base := fmt.Sprintf("ace demo-agent headless --format claude --script %s --state .ace/fake.state", filepath.Join(scripts, a+".txt"))
		fmt.Fprintf(&agents, "[agents.%s]\nrunner = \"exec\"\nheadless = %q\nheadless_resume = %q\nheadless_format = \"claude\"\n"+
			"env = { GIT_AUTHOR_NAME = \"fake\", GIT_AUTHOR_EMAIL = \"fake@ace.invalid\", GIT_COMMITTER_NAME = \"fake\", GIT_COMMITTER_EMAIL = \"fake@ace.invalid\" }\n",
			a, base, base+" --resume {session_id}")
	}
	ew.cfg = fmt.Sprintf("[workspace]\nroot = %q\n[tracker]\nkind = \"local\"\npath = %q\n[agent]\ndefault = \"fixer\"\n%s"+
		"[tmux]\nsocket = %q\n[monitor]\ninterval = \"200ms\"\nexec_idle_timeout = \"30s\"\nstuck_after = \"30s\"\nexec_turn_timeout = \"60s\"\ntimeout = \"1m\"\n"+
		"[poll]\ninterval = \"200ms\"\nmax_concurrent = 3\n[budget.run]\nmax_tokens = 30\n[sandbox]\nmode = \"on\"\nread_only = [%q]\n",
		root, folder, agents.String(), ew.socket, scripts)
	if err := os.WriteFile(filepath.Join(dir, "ace.toml"), []byte(ew.cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ew.endAgents() })
	return ew
}

// endAgents ends, by PID, the headless supervisors and agents the eval's runs started that are still there (an
// ace killed mid-run leaves them), and the eval's tmux server.
func (ew *evalWorld) endAgents() { endEvalAgents(ew.evalIn, ew.socket) }

// endEvalAgents ends, by PID, what the eval in dir left running: its headless supervisors and agents, and the tmux
// server of its socket (socket: the configured tmux.socket).
func endEvalAgents(dir, socket string) {
	files, _ := filepath.Glob(filepath.Join(dir, "ace", "run", "headless", "*.status.json"))
	for _, f := range files {
		if st, err := headless.ReadStatus(f); err == nil {
			_ = headless.Proc{PID: st.SupervisorPID, Start: st.SupervisorStart}.Signal(syscall.SIGKILL)
			_ = headless.Proc{PID: st.AgentPID, Start: st.AgentStart}.Signal(syscall.SIGKILL)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = tmuxops.New(eval.Socket(socket, dir)).KillServer(ctx)
}

// ace is `ace --config <world's> args…` as a user runs it, not yet started.
func (ew *evalWorld) ace(ctx context.Context, args ...string) (*exec.Cmd, *bytes.Buffer, *bytes.Buffer) {
	cmd := exec.CommandContext(ctx, "ace", append([]string{"--config", filepath.Join(ew.dir, "ace.toml")}, args...)...)
	home := filepath.Join(ew.dir, "home")
	_ = os.MkdirAll(home, 0o755)
	cmd.Env = append(os.Environ(), "HOME="+home, "NO_COLOR=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	return cmd, &stdout, &stderr
}

// TestEvalRunScoresEachAgentAndSurvivesAKill: ace eval run gives two tasks to three scripted agents through
// ace's own loop, boxed. Killed -9 once the first run is scored, it is run again and does only what is left:
// the first result is not redone. Then the fixer solved both tasks, the agent that asked a question (answered
// "decide yourself") and wrote a stub solved none, and the thief, which looked for the future every way the box
// leaves (every ref and reflog, the fix by id, a fetch from every remote, every pack and repository on the
// machine it can see, ace's mirror, the task set and the other runs by path) found nothing and solved none; the
// agent that spent past budget.run was stopped there, its work nothing. Nothing was posted
// to the tracker and no push reached the repository.
func TestEvalRunScoresEachAgentAndSurvivesAKill(t *testing.T) {
	t.Parallel()
	ew := newEvalWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	remoteHead := gittest.Run(t, ew.w.Remote, "for-each-ref")
	run := []string{"eval", "run", "--tasks", ew.tasks, "--dir", ew.evalIn, "--agents", "fixer,wrong,thief,spender"}

	bogus, _, bogusErr := ew.ace(ctx, "eval", "run", "--tasks", ew.tasks, "--dir", ew.evalIn, "--agents", "fixer,bogus")
	if err := bogus.Run(); err == nil || !strings.Contains(bogusErr.String(), "--agents: bogus") {
		t.Errorf("an agent that does not exist: %v\n%s", err, bogusErr)
	}
	pinned, _, pinnedErr := ew.ace(ctx, "eval", "run", "--tasks", ew.tasks, "--dir", ew.evalIn, "--agents", "fixer@9.9.9")
	if err := pinned.Run(); err == nil || !strings.Contains(pinnedErr.String(), "--agents: fixer@9.9.9: fixer is no CLI ace installs") {
		t.Errorf("a release of a custom agent: %v\n%s", err, pinnedErr)
	}
	absent, _, absentErr := ew.ace(ctx, "eval", "run", "--tasks", ew.tasks, "--dir", ew.evalIn, "--agents", "claude@2.1.331",
		"--no-install", "--releases", t.TempDir())
	if err := absent.Run(); err == nil || !strings.Contains(absentErr.String(), "install it with ace agents install claude@2.1.331") {
		t.Errorf("a release that is not installed, with --no-install: %v\n%s", err, absentErr)
	}
	firstResult := filepath.Join(ew.evalIn, "results", "1.json")
	before := ew.killAfterFirstResult(t, ctx, firstResult, append(run, "--jobs", "1")...)

	results := ew.runAgain(t, ctx, firstResult, before, append(run, "--jobs", "3", "--json")...)
	if len(results) != 8 {
		t.Fatalf("%d results, want 2 tasks × 4 agents", len(results))
	}
	solved := map[string]int{}
	for _, r := range results {
		if r.Solved {
			solved[r.Agent]++
		}
		t.Logf("%s %s: %s, check %s (%s), %d turns, %d questions, %.1fs, %+v, cli %q model %q", r.InstanceID, r.Agent, r.Status, r.Check, r.CheckDetail,
			r.Turns, r.Questions, r.WallSeconds, r.Usage, r.CLIVersion, r.Model)
		if turns := map[string]int{"fixer": 1, "wrong": 2, "thief": 1, "spender": 1}[r.Agent]; r.Turns != turns || r.Usage.InputTokens == 0 {
			t.Errorf("%s %s: %d turns and %d input tokens, want %d turns and the stream's tokens", r.InstanceID, r.Agent, r.Turns,
				r.Usage.InputTokens, turns)
		}
		switch r.Agent {
		case "fixer":
			if !strings.Contains(r.Patch, "+++ b/"+ew.fixes[r.InstanceID]) || strings.Contains(r.Patch, "tests/") {
				t.Errorf("%s: the fixer's work is not the fix:\n%s", r.InstanceID, r.Patch)
			}
		case "wrong":
			if r.Questions != 1 || r.Check != "fail" || !strings.Contains(r.Patch, "lib/stub.sh") {
				t.Errorf("%s: wrong asked %d questions, check %s, work:\n%s", r.InstanceID, r.Questions, r.Check, r.Patch)
			}
		case "thief":
			if strings.Contains(r.Patch, "LEAK") || !strings.Contains(r.Patch, "+== end") || !strings.Contains(r.Patch, ".pack\n") {
				t.Errorf("%s: the thief's findings:\n%s", r.InstanceID, r.Patch)
			}
		}
		if r.Agent == "spender" {
			// Its turn spent more than budget.run and ended unfinished: the question whether to go on is not
			// answered, the run is stopped, and its work, never pushed, is nothing.
			if r.Status != "cancelled" || !strings.Contains(r.Error, "budget") || r.Check != eval.CheckNoChange || r.Patch != "" {
				t.Errorf("%s spender: %s (%s), check %s, work %q", r.InstanceID, r.Status, r.Error, r.Check, r.Patch)
			}
			continue
		}
		if r.Status != "done" || r.RunID == 0 || r.CLIVersion != "" && r.Invalid != "" {
			t.Errorf("%s %s: run %d ended %s (%s)", r.InstanceID, r.Agent, r.RunID, r.Status, r.Error)
		}
	}
	if solved["fixer"] != 2 || solved["wrong"] != 0 || solved["thief"] != 0 {
		t.Errorf("solved %v, want fixer 2, wrong 0, thief 0", solved)
	}
	if after := gittest.Run(t, ew.w.Remote, "for-each-ref"); after != remoteHead {
		t.Errorf("the repository's refs changed:\n%s\n---\n%s", remoteHead, after)
	}
	if ents, _ := os.ReadDir(filepath.Join(ew.dir, "tracker", "issues")); len(ents) != 0 {
		t.Errorf("the tracker got %d issues or comments", len(ents))
	}

	report := func(format string, extra ...string) string {
		cmd, out, errOut := ew.ace(ctx, append([]string{"eval", "report", "--dir", ew.evalIn, "--format", format}, extra...)...)
		if err := cmd.Run(); err != nil {
			t.Fatalf("ace eval report --format %s: %v\n%s", format, err, errOut)
		}
		return out.String()
	}
	var rep struct {
		eval.Report
		Best *eval.Choice `json:"best"`
	}
	if err := json.Unmarshal([]byte(report("json", "--min-runs", "2")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Best == nil || rep.Best.Agent != "fixer" {
		t.Errorf("the agent recommended: %+v, want fixer", rep.Best)
	}
	want := map[string]float64{"fixer": 1, "wrong": 0, "thief": 0, "spender": 0}
	for _, a := range rep.Agents {
		if a.Runs != 2 || a.Rate != want[a.Agent] || a.Solved != int(2*want[a.Agent]) {
			t.Errorf("%s: %d of %d solved, rate %v; want %v of 2", a.Agent, a.Solved, a.Runs, a.Rate, want[a.Agent])
		}
	}
	if len(rep.Agents) != 4 || len(rep.Tasks) != 2 || !slices.Equal(rep.Tasks[0].SolvedBy, []string{"fixer"}) {
		t.Errorf("report %+v", rep)
	}
	text := report("text", "--min-runs", "3")
	t.Logf("ace eval report:\n%s", text)
	for _, line := range []string{"acme/calc: 8 runs of 2 tasks by 4 agents", "fixer    2     2       100%  34%–100%", "acme__calc-10  1/1    0/1    0/1    0/1      fixer",
		"no agent to recommend: none has 3 scored runs"} {
		if !strings.Contains(text, line) {
			t.Errorf("the text report lacks %q:\n%s", line, text)
		}
	}
	if csv := report("csv", "--by", "task"); !strings.HasPrefix(csv, "instance_id,fixer solved,fixer runs,wrong solved") ||
		!strings.Contains(csv, "\nacme__calc-4,1,1,0,1,0,1,0,1\n") {
		t.Errorf("the tasks' CSV:\n%s", csv)
	}
}

// TestEvalRunKilledCleanedAndRunAgain: an ace eval run killed -9 once its first run is scored leaves its working
// copies, cut bases and engine behind, in its default directory (under ace's root) or in one --dir put outside
// the root (so deep that its engine's sockets went to the temporary directory); ace clean removes them (those
// sockets too) and keeps the result (and, outside, a file of the user's beside the eval's
// directory); ace eval run again does only the run that had no result, from scratch, and solves it. A --dir that
// holds files no eval run made is refused, with why.
func TestEvalRunKilledCleanedAndRunAgain(t *testing.T) {
	t.Parallel()
	for _, where := range []string{"default", "outside"} {
		t.Run(where, func(t *testing.T) {
			t.Parallel()
			ew := newEvalWorld(t)
			ew.evalIn = filepath.Join(ew.dir, "root", "eval", "acme", "calc", "run")
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if where == "outside" {
				// So deep that its engine's sockets go to a directory of its own in the temporary one (runbox.ShortSocket).
				ew.evalIn = filepath.Join(ew.dir, "elsewhere", strings.Repeat("deep-", 10), "eval")
				mine := filepath.Join(filepath.Dir(ew.evalIn), "notes.txt")
				if err := os.MkdirAll(filepath.Dir(mine), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(mine, []byte("mine\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					if _, err := os.Stat(mine); err != nil {
						t.Errorf("the user's file beside the eval: %v", err)
					}
				})
				refused, _, errOut := ew.ace(ctx, "eval", "run", "--tasks", ew.tasks, "--dir", filepath.Dir(ew.evalIn), "--agents", "fixer")
				if err := refused.Run(); err == nil || !strings.Contains(errOut.String(), "holds notes.txt, which no ace eval run made there") {
					t.Errorf("ace eval run --dir of the user's files: %v\n%s", err, errOut)
				}
			}
			run := []string{"eval", "run", "--tasks", ew.tasks, "--dir", ew.evalIn, "--agents", "fixer", "--jobs", "1"}
			firstResult := filepath.Join(ew.evalIn, "results", "1.json")
			// Outside, the kill comes while the next item's run has its socket directory there: a finished run's
			// goes with it.
			inFlight := func() bool { return where != "outside" || len(runbox.ShortSocketDirs(eval.EngineRoot(ew.evalIn))) > 0 }
			before := ew.killAfterFirstResultAnd(t, ctx, firstResult, inFlight, run...)
			sockets := runbox.ShortSocketDirs(eval.EngineRoot(ew.evalIn))
			t.Cleanup(func() {
				for _, d := range sockets {
					_ = os.RemoveAll(d)
				}
			})
			if where == "outside" && len(sockets) != 1 {
				t.Errorf("the eval's engine kept its sockets in %v, want a directory of its own in the temporary one", sockets)
			}

			clean, out, errOut := ew.ace(ctx, "clean")
			if err := clean.Run(); err != nil {
				t.Fatalf("ace clean: %v\n%s\n%s", err, out, errOut)
			}
			t.Logf("ace clean:\n%s", out)
			for _, p := range sockets {
				if _, err := os.Stat(p); !os.IsNotExist(err) || !strings.Contains(out.String(), "removed "+p+" ") {
					t.Errorf("ace clean left the eval's sockets in %s (%v)", p, err)
				}
			}
			for _, left := range []string{"items", "ace"} {
				p := filepath.Join(ew.evalIn, left)
				if _, err := os.Stat(p); !os.IsNotExist(err) || !strings.Contains(out.String(), "removed "+p+" ") {
					t.Errorf("ace clean left %s (%v)", p, err)
				}
			}
			if ents, _ := os.ReadDir(ew.evalIn); len(ents) != 3 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("the eval directory holds %v after ace clean, want plan.json, results and run.lock", names)
			}

			results := ew.runAgain(t, ctx, firstResult, before, append(run, "--json")...)
			if len(results) != 2 {
				t.Fatalf("%d results, want 2 tasks × fixer", len(results))
			}
			for _, r := range results {
				if !r.Solved || r.Invalid != "" {
					t.Errorf("%s %s: solved %v (%s, %s, %s)", r.InstanceID, r.Agent, r.Solved, r.Check, r.CheckDetail, r.Invalid)
				}
			}
		})
	}
}

// killAfterFirstResult starts ace with args (an eval run), kills it -9 once it has written firstResult, and
// returns that result as it was then.
func (ew *evalWorld) killAfterFirstResult(t *testing.T, ctx context.Context, firstResult string, args ...string) []byte {
	t.Helper()
	return ew.killAfterFirstResultAnd(t, ctx, firstResult, func() bool { return true }, args...)
}

// killAfterFirstResultAnd is killAfterFirstResult once also holds too.
func (ew *evalWorld) killAfterFirstResultAnd(t *testing.T, ctx context.Context, firstResult string, also func() bool, args ...string) []byte {
	t.Helper()
	first, out, errOut := ew.ace(ctx, args...)
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- first.Wait() }()
	testkit.WaitFor(t, "the first result", time.Minute, func() bool {
		select {
		case err := <-exited:
			t.Fatalf("ace eval run ended before it was killed: %v\n%s\n%s", err, out, errOut)
		default:
		}
		_, err := os.Stat(firstResult)
		return err == nil && also()
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	before, err := os.ReadFile(firstResult)
	if err != nil {
		t.Fatal(err)
	}
	return before
}

// runAgain runs ace with args (the eval run again, --json) to its end and returns its results, checking that the
// result written before the kill (before, at firstResult) was kept as it was.
func (ew *evalWorld) runAgain(t *testing.T, ctx context.Context, firstResult string, before []byte, args ...string) []eval.RunResult {
	t.Helper()
	second, out, errOut := ew.ace(ctx, args...)
	if err := second.Run(); err != nil {
		t.Fatalf("ace eval run again: %v\n%s\n%s", err, out, errOut)
	}
	var results []eval.RunResult
	if err := json.Unmarshal(out.Bytes(), &results); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if after, _ := os.ReadFile(firstResult); !bytes.Equal(before, after) {
		t.Errorf("the result scored before the kill was redone:\n%s\n---\n%s", before, after)
	}
	return results
}
