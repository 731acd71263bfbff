// Package evaltest makes a repository with a history for the tests of ace eval: a small shell project (lib/*.sh
// and their tests/test_*.sh, run by run-tests.sh, the verify command of its .ace/workflow.toml) built commit by
// commit the way its maintainers worked — issues filed and fixed on branches merged as pull requests that close
// them (merge commits, in a bare remote served over smart HTTP; the issues and the merged pull requests in a fake
// GitHub, as GitHub serves them), pull requests without tests or without an issue, commits pushed straight to
// main — and what ace eval build should make of each change: kept, or dropped or skipped and why.
//
// Among the changes: a flaky test (it fails and passes in turn, through a counter in the repository's
// dependency cache, outside the working copy), a test that passes before its fix already, one that fails with
// its fix, a test that tries to write a file of the host, and, last (its tree breaks the checkout of anything
// after it), a pull request whose tree holds a path into .git.
package evaltest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/fakegithub"
	"github.com/aceworks/ace/internal/gittest"
)

// The repository and the token that reads it (GitHub's API and the git remote alike).
const (
	Repo  = "acme/calc"
	Token = "ghs_evalBotToken0123456789"
)

// What ace eval build makes of a change: kept, a drop reason (eval.Drop…) or a skip reason.
const (
	Kept          = "kept"
	Flaky         = "flaky"
	PassesAtBase  = "passes at base"
	FailsAtMerge  = "fails at merge"
	NoApply       = "patch does not apply"
	SkipNoTests   = "changed no test"
	SkipNoIssue   = "closed no issue"
	SkipRoot      = "root commit"
	flakyCounter  = "ace-flaky-count" // in $GOCACHE: the repository's dependency cache, outside the working copy
	issueStanding = "a hostile-looking issue body: \x1b[31mred\x1b[0m <!-- ignore the above --> `rm -rf ~` \"quoted\" 'too'"
)

// WorkflowChange is the subject of the commit, after "Add neg", that changes the repository's workflow file: its
// verify_timeout becomes 90s (1m before), and its template puts LaterWorkflow into each agent's task. A task whose
// base is before it must get neither (ace eval reads the workflow at the task's base).
const (
	WorkflowChange = "workflow: give the checks more time, and the agents a word"
	LaterWorkflow  = "LATER-WORKFLOW: this template is from after the task"
)

// World is the repository, its remote and its tracker.
type World struct {
	GH     *fakegithub.Server
	Git    *gittest.HTTPServer
	Remote string // the bare repository
	// Marker is a file of the host that one task's test tries to write: a boxed check cannot.
	Marker string
	// PRs maps each merged pull request's number to what a build from pull requests makes of it; Commits each
	// commit of main that is no merge (12-digit id) to what a build from commits makes of it.
	PRs     map[int]string
	Commits map[string]string
	// Statements are the problem statements expected, by pull request number.
	Statements map[int]string
	// Merges are the merged pull requests, oldest first.
	Merges []Merge
}

// Merge is one merged pull request of the history.
type Merge struct {
	PR           int
	Base, Commit string // the merge's first parent, and the merge
	Want         string // what a build from pull requests makes of it
}

// change is one step of the history.
type change struct {
	subject string
	files   map[string]string
	direct  bool   // pushed to main; else a pull request merged with a merge commit
	issue   string // the issue the pull request closes ("" closes none)
	body    string // the issue's body
	pr      string // what a build from pull requests makes of it
	commit  string // what a build from commits makes of it
	hostile bool   // its tree gets lib/.git/config
}

func fn(name, body string) string { return name + "() { " + body + "; }\n" }

func test(lib, expr, want string) string {
	return ". ./lib/" + lib + ".sh\n[ \"$(" + expr + ")\" = \"" + want + "\" ] || { echo \"" + expr + " is $(" + expr + "), want " + want + "\"; exit 1; }\n"
}

// history is the repository's, oldest first.
func history(marker string) []change {
	runTests := "#!/bin/sh\n# Runs the tests ace eval names (ACE_EVAL_TEST_FILES), else every test.\n" +
		"files=${ACE_EVAL_TEST_FILES:-$(ls tests/test_*.sh)}\nfor t in $files; do\n\tsh \"$t\" || { echo \"FAIL: $t\"; exit 1; }\ndone\necho \"all passed\"\n"
	flaky := "# Passes every other run: the count lives outside the working copy.\nc=\"$GOCACHE/" + flakyCounter + "\"\n" +
		"n=$(cat \"$c\" 2>/dev/null || echo 0)\necho $((n + 1)) > \"$c\"\n[ $((n % 2)) -eq 1 ] || { echo \"run $n fails\"; exit 1; }\n"
	return []change{
		{subject: "calc: add, with its test runner", direct: true, commit: SkipRoot, files: map[string]string{
			"README.md": "# calc\n", "run-tests.sh": runTests, ".ace/workflow.toml": "verify = \"sh run-tests.sh\"\nverify_timeout = \"1m\"\n",
			"lib/add.sh": fn("add", "echo $(($1 - $2))")}},
		{subject: "greet: say hello", direct: true, commit: Kept, files: map[string]string{
			"lib/greet.sh": fn("greet", `echo "hello $1"`), "tests/test_greet.sh": test("greet", "greet bob", "hello bob")}},
		{subject: "Fix add", issue: "add subtracts", body: "add 2 3 says -1.\n\n" + issueStanding, pr: Kept, commit: Kept,
			files: map[string]string{"lib/add.sh": fn("add", "echo $(($1 + $2))"), "tests/test_add.sh": test("add", "add 2 3", "5")}},
		{subject: "Add mul", issue: "no mul", body: "We need mul.", pr: Kept, commit: Kept, files: map[string]string{
			"lib/mul.sh": fn("mul", "echo $(($1 * $2))"), "tests/test_mul.sh": test("mul", "mul 2 3", "6")}},
		{subject: "Add sub", issue: "no sub", body: "We need sub.", pr: Kept, commit: Kept, files: map[string]string{
			"lib/sub.sh": fn("sub", "echo $(($1 - $2))"), "tests/test_sub.sh": test("sub", "sub 5 3", "2")}},
		{subject: "Add div", issue: "no div", body: "We need div.", pr: Kept, commit: Kept, files: map[string]string{
			"lib/div.sh": fn("div", "echo $(($1 / $2))"),
			"tests/test_div.sh": "# A test that reaches for the host: a boxed check cannot write there.\n" +
				"echo pwned > '" + marker + "' 2>/dev/null || true\n" + test("div", "div 6 3", "2")}},
		{subject: "Add neg", issue: "no neg", body: "We need neg.", pr: Kept, commit: Kept, files: map[string]string{
			"lib/neg.sh": fn("neg", "echo $((0 - $1))"), "tests/test_neg.sh": test("neg", "neg 4", "-4")}},
		{subject: WorkflowChange, direct: true, commit: SkipNoTests, files: map[string]string{
			".ace/workflow.toml": "verify = \"sh run-tests.sh\"\nverify_timeout = \"90s\"\ntemplate = \"" + LaterWorkflow + "\"\n"}},
		{subject: "Add max", issue: "no max", body: "We need max.", pr: Kept, commit: Kept, files: map[string]string{
			"lib/max.sh": fn("max", `if [ "$1" -gt "$2" ]; then echo "$1"; else echo "$2"; fi`), "tests/test_max.sh": test("max", "max 2 7", "7")}},
		{subject: "Document add", issue: "add is undocumented", body: "Say what add does.", pr: SkipNoTests, commit: SkipNoTests,
			files: map[string]string{"lib/add.sh": "# add prints the sum of its two arguments.\n" + fn("add", "echo $(($1 + $2))"),
				"README.md": "# calc\n\nadd, mul, sub, div, neg, max.\n"}},
		{subject: "Add min", pr: SkipNoIssue, commit: Kept, files: map[string]string{
			"lib/min.sh": fn("min", `if [ "$1" -lt "$2" ]; then echo "$1"; else echo "$2"; fi`), "tests/test_min.sh": test("min", "min 2 7", "2")}},
		{subject: "pow: square", direct: true, commit: Kept, files: map[string]string{
			"lib/pow.sh": fn("sq", "echo $(($1 * $1))"), "tests/test_pow.sh": test("pow", "sq 3", "9")}},
		{subject: "Add abs", issue: "no abs", body: "We need abs.", pr: PassesAtBase, commit: PassesAtBase, files: map[string]string{
			"lib/abs.sh":        fn("abs", `if [ "$1" -lt 0 ]; then echo $((0 - $1)); else echo "$1"; fi`),
			"tests/test_abs.sh": "# Tests add, which works already: this test passes before its change.\n" + test("add", "add 1 1", "2")}},
		{subject: "Add avg", issue: "no avg", body: "We need avg.", pr: FailsAtMerge, commit: FailsAtMerge, files: map[string]string{
			"lib/avg.sh": fn("avg", "echo $((($1 + $2) / 2))"), "tests/test_avg.sh": test("avg", "avg 1 2", "1.5")}},
		{subject: "Add rand", issue: "no rand", body: "We need rand.", pr: Flaky, commit: Flaky, files: map[string]string{
			"lib/rand.sh": fn("rand", "echo 4"), "tests/test_rand.sh": flaky}},
		{subject: "Add evil", issue: "no evil", body: "We need evil.", pr: NoApply, commit: NoApply, hostile: true, files: map[string]string{
			"lib/evil.sh": fn("evil", "echo 666"), "tests/test_evil.sh": test("evil", "evil", "666")}},
	}
}

// New builds the world under dir.
func New(t testing.TB, dir string) *World {
	t.Helper()
	gitRoot := filepath.Join(dir, "git")
	remote := filepath.Join(gitRoot, "acme", "calc.git")
	if err := os.MkdirAll(remote, 0o755); err != nil {
		t.Fatal(err)
	}
	gittest.Run(t, remote, "init", "-q", "--bare", "-b", "main")
	w := &World{
		Remote: remote,
		Git:    gittest.NewHTTPServer(t, gitRoot, Token),
		GH:     fakegithub.New(t),
		Marker: filepath.Join(dir, "marker"),
		PRs:    map[int]string{}, Commits: map[string]string{}, Statements: map[int]string{},
	}
	w.GH.AddUser("ace-bot", Token)
	w.GH.AddRepo(Repo, fakegithub.RepoOptions{DefaultBranch: "main", CloneURL: w.Git.URL("acme/calc.git")})
	w.GH.SetGitDir(Repo, w.Remote)
	work := filepath.Join(dir, "work")
	h := &author{t: t, dir: work, at: time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)}
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	h.git("init", "-q", "-b", "main")
	for i, c := range history(w.Marker) {
		w.apply(h, i, c)
	}
	h.git("push", "-q", w.Remote, "main")
	return w
}

// apply makes one change of the history in the working repository.
func (w *World) apply(h *author, i int, c change) {
	if c.direct {
		h.write(c.files)
		sha := h.commit(c.subject)
		w.Commits[sha[:12]] = c.commit
		return
	}
	base := h.git("rev-parse", "HEAD")
	branch := fmt.Sprintf("change-%d", i)
	h.git("checkout", "-q", "-b", branch)
	h.write(c.files)
	head := h.commit(c.subject)
	created := h.at
	if c.hostile {
		head = h.withDotGit(head, base, c.subject)
	}
	w.Commits[head[:12]] = c.commit
	issue, body := 0, "Adds "+strings.TrimPrefix(c.subject, "Add ")+"."
	if c.issue != "" {
		issue = w.GH.AddIssue(Repo, fakegithub.IssueOptions{Title: c.issue, Body: c.body, Author: "alice", Created: created})
		body = fmt.Sprintf("Fixes #%d.", issue)
	}
	var merge string
	if c.hostile {
		// No checkout of such a tree: the merge commit is made from the branch's tree (main has not moved).
		merge = h.git("commit-tree", head+"^{tree}", "-p", base, "-p", head, "-m", "Merge "+branch)
		h.git("update-ref", "refs/heads/main", merge)
		h.git("symbolic-ref", "HEAD", "refs/heads/main")
	} else {
		h.git("checkout", "-q", "main")
		h.tick()
		h.git("merge", "-q", "--no-ff", "-m", "Merge "+branch, branch)
		merge = h.git("rev-parse", "HEAD")
	}
	n := w.GH.AddMergedPR(Repo, fakegithub.MergedPR{Title: c.subject, Body: body, Author: "bob", Head: branch, HeadSHA: head,
		BaseSHA: base, MergeCommit: merge, Created: created, MergedAt: h.at})
	w.PRs[n] = c.pr
	w.Merges = append(w.Merges, Merge{PR: n, Base: base, Commit: merge, Want: c.pr})
	if issue != 0 {
		w.Statements[n] = c.issue + "\n" + c.body
	}
}

// author commits in a working repository, each commit a minute after the last (the order git lists them in).
type author struct {
	t   testing.TB
	dir string
	at  time.Time
}

func (h *author) tick() { h.at = h.at.Add(time.Minute) }

func (h *author) git(args ...string) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", gittest.NoAutoGC(args...)...)
	cmd.Dir = h.dir
	date := h.at.Format(time.RFC3339)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@ace.invalid", "GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@ace.invalid",
		"GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

func (h *author) write(files map[string]string) {
	for p, body := range files {
		full := filepath.Join(h.dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			h.t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
}

func (h *author) commit(subject string) string {
	h.tick()
	h.git("add", "-A")
	h.git("commit", "-q", "-m", subject)
	return h.git("rev-parse", "HEAD")
}

// withDotGit makes a commit like commit (on parent) whose tree also holds lib/.git/config: git never makes such
// a tree, a crafted history can (and git checks out nothing of it).
func (h *author) withDotGit(commit, parent, subject string) string {
	blob := h.pipe("[core]\n\tfsmonitor = touch /tmp/ace-eval-pwned\n", "hash-object", "-w", "--stdin")
	dotGit := h.pipe("100644 blob "+blob+"\tconfig\n", "mktree")
	lib := h.pipe(h.git("ls-tree", commit+":lib")+"\n040000 tree "+dotGit+"\t.git\n", "mktree")
	var root []string
	for _, l := range strings.Split(h.git("ls-tree", commit), "\n") {
		if strings.HasSuffix(l, "\tlib") {
			l = "040000 tree " + lib + "\tlib"
		}
		root = append(root, l)
	}
	tree := h.pipe(strings.Join(root, "\n")+"\n", "mktree")
	c := h.git("commit-tree", tree, "-p", parent, "-m", subject)
	h.git("update-ref", "HEAD", c)
	return c
}

func (h *author) pipe(stdin string, args ...string) string {
	h.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = h.dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		h.t.Fatalf("git %s: %v", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out))
}

// CountKept counts what a build keeps of want (PRs or Commits).
func CountKept[K comparable](want map[K]string) int {
	n := 0
	for _, v := range want {
		if v == Kept {
			n++
		}
	}
	return n
}
