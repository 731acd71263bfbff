package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aceworks/ace/internal/gittest"
	"github.com/aceworks/ace/internal/realcli"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/modelserver"
)

// TestEvalCanaryOfTwoReleases: the two pinned releases of claude side by side (a canary of a new release), each
// run as ace eval runs it — through ace's own loop, headless, boxed — from the pinned set that holds it (never the
// network: --no-install) against the scripted model server, which applies the task's true fix. Both solve it;
// each result records the release it ran, and the model heard each from that release; the report shows both rows
// and --compare sets the newer against the older. Each item's model server is its own (the model writes into that
// item's working copy), so the eval runs twice: the second does only the newer release, the first's result kept.
func TestEvalCanaryOfTwoReleases(t *testing.T) { evalCanary(t, "claude") }

// TestEvalCanaryOfTwoCodexReleases is the canary of codex, whose commands start ace's codex-gh in front of the
// CLI: each release must be the codex that wrapper starts, with no codex on PATH at all.
func TestEvalCanaryOfTwoCodexReleases(t *testing.T) { evalCanary(t, "codex") }

func evalCanary(t *testing.T, cli string) {
	pinned := realcli.Pinned(t, cli)
	if len(pinned) < 2 {
		t.Skipf("one release of %s is pinned (%s): nothing to compare", cli, pinned[0].Label())
	}
	older, newer := pinned[0], pinned[len(pinned)-1]
	if _, err := os.Stat(older.Bin); err != nil {
		t.Skipf("realcli: %s is not installed: run `npm ci --prefix tools/agent-clis/%s`", older.Label(), older.Set)
	}
	realcli.Require(t, newer)
	if !realcli.Enter(t) {
		return
	}
	ew := newEvalWorld(t)
	tasks, err := eval.ReadTasks(ew.tasks)
	if err != nil {
		t.Fatal(err)
	}
	task := tasks[0]
	if err := eval.WriteTasks(ew.tasks, tasks[:1]); err != nil {
		t.Fatal(err)
	}
	// The true fix, as the model makes it: the task read, each file the fix changed written whole as the merge has
	// it, committed, and ace's done protocol followed.
	fix := func(workdir string) []modelserver.Turn {
		turns := []modelserver.Turn{modelserver.ReadFile(filepath.Join(workdir, "ACE_TASK.md"))}
		for _, path := range strings.Fields(ew.fixes[task.InstanceID]) {
			turns = append(turns, modelserver.WriteFile(filepath.Join(workdir, path),
				gittest.Run(t, ew.w.Remote, "show", task.MergeCommit+":"+path)+"\n"))
		}
		return append(turns, modelserver.Shell("git add -A && git commit -q -m 'Fix the task'"),
			modelserver.WriteFile(filepath.Join(workdir, ".ace", "DONE"), "Fixed it.\n"))
	}
	// Items are numbered as the plan adds them: the task by the older release, then by the newer.
	workdir := func(n int) string {
		return filepath.Join(ew.evalIn, "items", fmt.Sprint(n), "ace", "worktrees", "acme", "calc", fmt.Sprint(n))
	}
	servers := []*modelserver.Server{
		modelserver.Start(t, modelserver.Scenario{Turns: fix(workdir(1)), Final: "All done."}),
		modelserver.Start(t, modelserver.Scenario{Turns: fix(workdir(2)), Final: "All done."}),
	}
	home := realcli.NewHome(t, newer, servers[0].URL())
	home.Setenv("PATH", os.Getenv("PATH")) // no pinned set first: the release runs from its own directory
	// The model server an eval run's agents talk to: claude's in its environment, codex's in its config.
	pointAt := func(srv *modelserver.Server) {
		client, err := modelserver.ClientFor(cli, srv.URL(), false)
		if err != nil {
			t.Fatal(err)
		}
		for rel, content := range client.Files {
			home.WriteFile(t, rel, content)
		}
		for _, kv := range client.Env {
			k, v, _ := strings.Cut(kv, "=")
			home.Setenv(k, v)
		}
	}
	cfg := fmt.Sprintf("[workspace]\nroot = %q\n[tracker]\nkind = \"local\"\npath = %q\n[agent]\ndefault = %q\n"+
		"[agents.%s]\nrunner = \"exec\"\n[tmux]\nsocket = %q\n[monitor]\ninterval = \"250ms\"\nexec_idle_timeout = \"3m\"\n"+
		"exec_turn_timeout = \"3m\"\ntimeout = \"4m\"\ncompact_threshold = 67108864\n[poll]\ninterval = \"250ms\"\nmax_concurrent = 1\n"+
		"[sandbox]\nmode = \"on\"\n", filepath.Join(ew.dir, "root"), filepath.Join(ew.dir, "tracker"), cli, cli, ew.socket)
	if err := os.WriteFile(filepath.Join(ew.dir, "ace.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	prefix := func(c realcli.CLI) string { return filepath.Dir(filepath.Dir(filepath.Dir(c.Bin))) }
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(srv *modelserver.Server, agents string) []eval.RunResult {
		pointAt(srv)
		cmd, out, errOut := ew.ace(ctx, "eval", "run", "--tasks", ew.tasks, "--dir", ew.evalIn, "--agents", agents, "--no-install",
			"--releases", prefix(older), "--releases", prefix(newer), "--json")
		cmd.Env = append(cmd.Env, home.Env...)
		if err := cmd.Run(); err != nil {
			t.Fatalf("ace eval run --agents %s: %v\n%s\n%s\n%s", agents, err, out, errOut, evalLeftovers(ew.evalIn, srv))
		}
		t.Logf("ace eval run --agents %s:\n%s", agents, errOut)
		if strings.Contains(errOut.String(), "UNBOXED") {
			t.Errorf("the eval ran unboxed:\n%s", errOut)
		}
		var results []eval.RunResult
		if err := json.Unmarshal(out.Bytes(), &results); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return results
	}
	run(servers[0], older.Label())
	results := run(servers[1], older.Label()+","+newer.Label())
	if len(results) != 2 {
		t.Fatalf("%d results, want 1 task × 2 releases", len(results))
	}
	for i, r := range results {
		t.Logf("%s %s: %s, check %s (%s), %d turns, %.1fs, %+v, cli %q model %q", r.InstanceID, r.Agent, r.Status, r.Check, r.CheckDetail,
			r.Turns, r.WallSeconds, r.Usage, r.CLIVersion, r.Model)
		want := map[string]string{older.Label(): older.Version, newer.Label(): newer.Version}[r.Agent]
		if !r.Solved || r.Invalid != "" || r.CLIVersion != want || r.Usage.InputTokens == 0 {
			t.Errorf("%s: solved %v (%s, %s), ran release %q, want %q solved", r.Agent, r.Solved, r.Check, r.Invalid, r.CLIVersion, want)
		}
		if len(servers[i].Requests()) == 0 {
			t.Errorf("%s's model server heard nothing", r.Agent)
		}
		// The process that ran: each CLI names its release in the User-Agent of its model requests.
		for _, q := range servers[i].Requests() {
			if ua := q.Header.Get("User-Agent"); q.Provider != "" && !strings.Contains(ua, "/"+want) {
				t.Errorf("%s: a model request came from %q, not release %s", r.Agent, ua, want)
				break
			}
		}
	}

	cmd, out, errOut := ew.ace(ctx, "eval", "report", "--dir", ew.evalIn, "--compare", older.Label()+","+newer.Label(), "--min-runs", "1")
	if err := cmd.Run(); err != nil {
		t.Fatalf("ace eval report: %v\n%s", err, errOut)
	}
	text := out.String()
	t.Logf("ace eval report --compare:\n%s", text)
	for _, want := range []string{older.Label() + "  1     1       100%", newer.Label() + "  1     1       100%",
		newer.Label() + " against " + older.Label() + ":", "+0 points, 95% interval", "tasks where they differ: none"} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}

// evalLeftovers is what a failed eval run shows: its files, the agents' logs and the model's requests.
func evalLeftovers(dir string, srv *modelserver.Server) string {
	var b strings.Builder
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() && (fi.Name() == ".git" || fi.Name() == "objects") {
			return filepath.SkipDir
		}
		fmt.Fprintf(&b, "%s %d\n", p, fi.Size())
		if !fi.IsDir() && (strings.Contains(p, "/logs/") || strings.HasSuffix(p, ".json")) && fi.Size() < 64<<10 {
			body, _ := os.ReadFile(p)
			fmt.Fprintf(&b, "%s\n", body)
		}
		return nil
	})
	for _, q := range srv.Requests() {
		fmt.Fprintf(&b, "model: %s %s status=%d turn=%d final=%v\n", q.Method, q.Path, q.Status, q.Turn, q.Final)
	}
	return b.String()
}
