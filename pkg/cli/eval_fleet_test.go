package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/internal/testkit"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/store"
)

// evalHost is one ace host of a fleet running an eval: the world's ace.toml with a root, eval directory and tmux
// socket of its own, the shared store and its own host name.
type evalHost struct {
	name, cfg, evalDir, socket string
	ew                         *evalWorld
}

func newEvalHost(t *testing.T, ew *evalWorld, name, url string) *evalHost {
	t.Helper()
	dir := t.TempDir()
	h := &evalHost{name: name, cfg: filepath.Join(dir, "ace.toml"), evalDir: filepath.Join(dir, "eval"), socket: ew.socket + "-" + name, ew: ew}
	cfg := strings.Replace(ew.cfg, fmt.Sprintf("root = %q", filepath.Join(ew.dir, "root")), fmt.Sprintf("root = %q", filepath.Join(dir, "root")), 1)
	cfg = strings.Replace(cfg, fmt.Sprintf("socket = %q", ew.socket), fmt.Sprintf("socket = %q", h.socket), 1)
	cfg += fmt.Sprintf("[store]\nurl = %q\n[host]\nname = %q\ndead_after = \"10s\"\n", url, name)
	if err := os.WriteFile(h.cfg, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.endAgents)
	return h
}

// ace is `ace --config <the host's> args…`, not yet started.
// Its standard output and error are kept apart (--json prints JSON alone).
func (h *evalHost) ace(ctx context.Context, args ...string) (cmd *exec.Cmd, stdout, stderr *testkit.Buffer) {
	cmd = exec.CommandContext(ctx, "ace", append([]string{"--config", h.cfg}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Join(h.ew.dir, "home"), "NO_COLOR=1")
	stdout, stderr = &testkit.Buffer{}, &testkit.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	return cmd, stdout, stderr
}

// endAgents ends, by PID, the headless supervisors and agents the host's eval runs left, and its eval tmux server.
func (h *evalHost) endAgents() { endEvalAgents(h.evalDir, h.socket) }

// runs are the runs of the host's eval engine (its own SQLite store), by issue: item N is issue N.
func (h *evalHost) runs(t *testing.T) map[int][]*store.Run {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(h.evalDir, "ace", "ace.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(context.Background(), store.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	by := map[int][]*store.Run{}
	for _, r := range runs {
		by[r.Issue] = append(by[r.Issue], r)
	}
	return by
}

// TestEvalRunSharedByAFleet: two ace hosts, each with its own root, eval directory and tmux server, share one
// PostgreSQL store ([store] url) and run the same eval (two tasks × fixer and wrong × two runs) at once: its items are
// numbered once for both, each is run by one host at a time, and the results are kept in the store. Host alpha is
// killed -9 while it holds an item: beta takes that item over once alpha's lease (host.dead_after) has run out,
// and ends with every item scored exactly once. ace eval report on either host reports all eight: the fixer solved
// every run, wrong none.
func TestEvalRunSharedByAFleet(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	ew := newEvalWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	alpha, beta := newEvalHost(t, ew, "alpha", url), newEvalHost(t, ew, "beta", url)
	run := func(h *evalHost) []string {
		return []string{"eval", "run", "--tasks", ew.tasks, "--dir", h.evalDir, "--agents", "fixer,wrong", "--runs", "2", "--jobs", "1", "--json"}
	}
	// The store's schema, made as a host makes it, before the test looks into its eval_items.
	st, err := store.OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	// held is the item alpha holds unscored once it has scored one, if any.
	held := func() (n int, scored bool) {
		var alphaScored int
		if err := db.QueryRow(ctx, "SELECT count(*) FROM eval_items WHERE host='alpha' AND result<>''").Scan(&alphaScored); err != nil {
			t.Fatal(err)
		}
		err := db.QueryRow(ctx, "SELECT n FROM eval_items WHERE host='alpha' AND result=''").Scan(&n)
		if err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		return n, alphaScored > 0
	}

	a, _, aOut := alpha.ace(ctx, run(alpha)...)
	b, bOut, bErr := beta.ace(ctx, run(beta)...)
	for _, c := range []*exec.Cmd{a, b} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	aExited := make(chan error, 1)
	go func() { aExited <- a.Wait() }()
	bExited := make(chan error, 1)
	go func() { bExited <- b.Wait() }()
	var taken int
	testkit.WaitFor(t, "alpha holding an item once it has scored one", 2*time.Minute, func() bool {
		select {
		case err := <-aExited:
			t.Fatalf("alpha ended before it was killed: %v\n%s", err, aOut)
		default:
		}
		n, scored := held()
		taken = n
		return scored && n > 0
	})
	if err := a.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-aExited
	killed := time.Now()
	if err := <-bExited; err != nil {
		t.Fatalf("beta: %v\n%s\n%s", err, bOut, bErr)
	}
	t.Logf("beta ended %s after alpha was killed holding item %d", time.Since(killed).Round(time.Millisecond), taken)
	var results []eval.RunResult
	if err := json.Unmarshal([]byte(bOut.String()), &results); err != nil {
		t.Fatalf("%v\n%s", err, bOut)
	}
	if len(results) != 8 {
		t.Fatalf("beta reports %d results, want 2 tasks × 2 agents × 2 runs:\n%s", len(results), bOut)
	}
	hosts := map[string]*evalHost{"alpha": alpha, "beta": beta}
	runs := map[string]map[int][]*store.Run{"alpha": alpha.runs(t), "beta": beta.runs(t)}
	by := map[string]int{}
	for _, r := range results {
		t.Logf("item %d %s %s: host %s, run %d, %s, check %s", r.N, r.InstanceID, r.Agent, r.Host, r.RunID, r.Status, r.Check)
		by[r.Host]++
		if hosts[r.Host] == nil {
			t.Errorf("item %d was scored by host %q", r.N, r.Host)
			continue
		}
		if rs := runs[r.Host][r.N]; len(rs) != 1 || rs[0].ID != r.RunID {
			t.Errorf("item %d: host %s's eval engine has %d runs of it, want its one run %d", r.N, r.Host, len(rs), r.RunID)
		}
		other := map[string]string{"alpha": "beta", "beta": "alpha"}[r.Host]
		if rs := runs[other][r.N]; len(rs) != 0 && !(r.N == taken && r.Host == "beta") {
			t.Errorf("item %d, scored by %s, was run by %s too", r.N, r.Host, other)
		}
		if want := r.Agent == "fixer"; r.Solved != want || r.Status != "done" {
			t.Errorf("item %d (%s): %s, solved %v", r.N, r.Agent, r.Status, r.Solved)
		}
		if r.N == taken && r.Host != "beta" {
			t.Errorf("item %d, which alpha held when it was killed, was scored by %s", r.N, r.Host)
		}
	}
	if by["alpha"] == 0 || by["beta"] == 0 {
		t.Errorf("results by host %v: want both hosts to have run items", by)
	}
	// Killed holding the item, alpha may or may not have made its run of it yet (the hold is taken first); one it
	// made did not end.
	if rs := runs["alpha"][taken]; len(rs) > 1 || len(rs) == 1 && rs[0].Status.Terminal() {
		t.Errorf("alpha's run of item %d, killed: %+v", taken, rs)
	}
	t.Logf("beta's ace eval run, its standard error:\n%s", bErr)

	for _, h := range []*evalHost{alpha, beta} {
		cmd, out, errOut := h.ace(ctx, "eval", "report", "--dir", h.evalDir, "--format", "json", "--min-runs", "2")
		if err := cmd.Run(); err != nil {
			t.Fatalf("ace eval report on %s: %v\n%s", h.name, err, errOut)
		}
		var rep struct {
			eval.Report
			Best *eval.Choice `json:"best"`
		}
		if err := json.Unmarshal([]byte(out.String()), &rep); err != nil {
			t.Fatalf("%s: %v\n%s", h.name, err, out)
		}
		want := map[string]int{"fixer": 4, "wrong": 0}
		if rep.Runs != 8 || len(rep.Agents) != 2 || rep.Best == nil || rep.Best.Agent != "fixer" {
			t.Errorf("ace eval report on %s: %d runs, %d agents, best %+v", h.name, rep.Runs, len(rep.Agents), rep.Best)
		}
		for _, ag := range rep.Agents {
			if ag.Runs != 4 || ag.Solved != want[ag.Agent] {
				t.Errorf("ace eval report on %s: %s solved %d of %d, want %d of 4", h.name, ag.Agent, ag.Solved, ag.Runs, want[ag.Agent])
			}
		}
	}
}
