package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aceworks/ace/internal/pgtest"
	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/usage"
)

// evalRun is one scored run of a test's eval.
type evalRun struct {
	task, agent string
	solved      bool
	cost, secs  float64
	invalid     string
}

// evalSink keeps a test's eval as ace eval run does: in this host's eval directory (underRoot), or in a fleet's
// store (inFleet).
type evalSink func(t *testing.T, repo string, results []eval.RunResult)

// underRoot keeps an eval where ace eval run keeps a repository's latest eval under root, in its files.
func underRoot(root string) evalSink {
	return func(t *testing.T, repo string, results []eval.RunResult) {
		dir := eval.DirBeside(eval.DefaultTasks(root, repo))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, r := range results {
			if err := eval.WriteResult(dir, r); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// inFleet keeps an eval as a host of a fleet whose store is st runs it, in dir of its own root (the repository's
// default directory there unless dir is given): numbered and scored in the shared store.
func inFleet(st *store.Store, dir string) evalSink {
	return func(t *testing.T, repo string, results []eval.RunResult) {
		ctx := context.Background()
		d := dir
		if d == "" {
			d = eval.DirBeside(eval.DefaultTasks("/srv/other-host", repo))
		}
		book := &eval.SharedBook{Store: st, Name: eval.SharedName(repo, d), Host: "other-host", Lease: time.Minute}
		items := make([]eval.Item, len(results))
		for i, r := range results {
			items[i] = eval.Item{InstanceID: r.InstanceID, Agent: r.Agent, Run: r.Run}
		}
		items, err := book.Number(ctx, items)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range results {
			r.Item = items[i]
			if err := book.Write(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// writeEval keeps runs as repo's eval in sink.
func writeEval(t *testing.T, sink evalSink, repo string, runs ...evalRun) {
	t.Helper()
	var results []eval.RunResult
	for i, r := range runs {
		results = append(results, eval.RunResult{Item: eval.Item{N: i + 1, InstanceID: r.task, Agent: r.agent, Run: i + 1}, Repo: repo,
			Status: "done", Solved: r.solved, Invalid: r.invalid, Usage: usage.Usage{InputTokens: 1000, OutputTokens: 100, CostUSD: r.cost},
			WallSeconds: r.secs, CLIVersion: "2.1.331", Model: "scripted", ScoredAt: time.Date(2026, 11, 27, 10, i, 0, 0, time.UTC)})
	}
	sink(t, repo, results)
}

// widgetsEval is acme/widgets' eval: claude solves 2 of 3 ($0.06 in all, median 20s); codex 1 of 4 ($0.20, median
// 75s), and one more run of codex that does not count.
func widgetsEval(t *testing.T, sink evalSink) {
	writeEval(t, sink, "acme/widgets",
		evalRun{"acme__widgets-1", "claude@2.1.331", true, 0.01, 10, ""},
		evalRun{"acme__widgets-2", "claude@2.1.331", true, 0.02, 40, ""},
		evalRun{"acme__widgets-3", "claude@2.1.331", false, 0.03, 20, ""},
		evalRun{"acme__widgets-1", "codex", true, 0.05, 30, ""},
		evalRun{"acme__widgets-2", "codex", false, 0.05, 120, ""},
		evalRun{"acme__widgets-3", "codex", false, 0.05, 60, ""},
		evalRun{"acme__widgets-4", "codex", false, 0.05, 90, ""},
		evalRun{"acme__widgets-4", "codex", true, 9, 9, "codex ran release \"0.1\", not 0.2"})
}

// getEvals is GET /api/v1/evals's.
func getEvals(t *testing.T, f *fixture) []eval.Latest {
	t.Helper()
	resp := f.do("GET", "/api/v1/evals", "", nil)
	var got struct{ Evals []eval.Latest }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/evals: %d %v", resp.StatusCode, err)
	}
	return got.Evals
}

// checkWidgets checks widgetsEval summed up by agent as ace eval report does — the solve rate over the scored runs
// with its Wilson interval, cost per solved task, median time.
func checkWidgets(t *testing.T, l eval.Latest) {
	t.Helper()
	if l.Repo != "acme/widgets" || l.Runs != 8 || len(l.Tasks) != 4 || !l.ScoredAt.Equal(time.Date(2026, 11, 27, 10, 7, 0, 0, time.UTC)) ||
		len(l.Agents) != 2 {
		t.Fatalf("acme/widgets' eval %+v", l)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	c, x := l.Agents[0], l.Agents[1]
	lo, hi := eval.Wilson(2, 3)
	if c.Agent != "claude@2.1.331" || c.Runs != 3 || c.Solved != 2 || !near(c.Rate, 2.0/3) || !near(c.Low, lo) || !near(c.High, hi) ||
		c.CostPerSolved == nil || !near(*c.CostPerSolved, 0.03) || c.MedianSeconds != 20 {
		t.Errorf("claude: %+v", c)
	}
	lo, hi = eval.Wilson(1, 4)
	if x.Agent != "codex" || x.Runs != 4 || x.NotScored != 1 || x.Solved != 1 || !near(x.Low, lo) || !near(x.High, hi) ||
		x.CostPerSolved == nil || !near(*x.CostPerSolved, 0.2) || x.MedianSeconds != 75 {
		t.Errorf("codex: %+v", x)
	}
}

// fleetEvals is a fleet's store (PostgreSQL) holding acme/widgets' eval, which another host ran, and acme/gadgets'
// eval in a directory that is not its default one (a canary, say: not the latest eval); this host's root holds
// an older eval of acme/widgets of its own, from before the store was shared, and one of acme/solo, which the
// fleet has none of.
func fleetEvals(t *testing.T) (*store.Store, string) {
	st, err := store.OpenPostgres(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	widgetsEval(t, inFleet(st, ""))
	writeEval(t, inFleet(st, "/srv/other-host/canary"), "acme/gadgets", evalRun{"acme__gadgets-1", "codex", true, 0.01, 5, ""})
	root := t.TempDir()
	writeEval(t, underRoot(root), "acme/widgets", evalRun{"acme__widgets-1", "gemini", false, 0.01, 5, ""})
	writeEval(t, underRoot(root), "acme/solo", evalRun{"acme__solo-1", "gemini", true, 0.01, 5, ""})
	return st, root
}

// TestAPIEvalsByRepositoryAndAgent: GET /api/v1/evals sums each repository's latest eval up by agent as ace eval
// report does — the solve rate over the scored runs with its Wilson interval, cost per solved task, median time —
// leaves out a repository whose eval has no results yet, and asks for the token like every other route.
func TestAPIEvalsByRepositoryAndAgent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	widgetsEval(t, underRoot(root))
	writeEval(t, underRoot(root), "acme/empty") // ace eval run made the directory, nothing is scored yet
	f := newFixture(t, func(o *Options) { o.Root = root })
	got := getEvals(t, f)
	if len(got) != 1 {
		t.Fatalf("evals %+v, want acme/widgets' alone", got)
	}
	checkWidgets(t, got[0])

	// No eval at all: an empty list, which the dashboard shows as nothing.
	bare := newFixture(t, nil)
	if text := body(t, bare.do("GET", "/api/v1/evals", "", nil)); strings.TrimSpace(text) != `{"evals":[]}` {
		t.Errorf("without an eval: %s", text)
	}

	// With a token, the evals are as private as the runs.
	tok := newFixture(t, func(o *Options) { o.Root = root; o.Token = "tok-123" })
	if resp := tok.do("GET", "/api/v1/evals", "", nil); resp.StatusCode != 401 {
		t.Errorf("without the token: %d, want 401", resp.StatusCode)
	}
	if resp := tok.do("GET", "/api/v1/evals", "", map[string]string{"Authorization": "Bearer tok-123"}); resp.StatusCode != 200 {
		t.Errorf("with the token: %d", resp.StatusCode)
	}
}

// TestAPIEvalsOfAFleet: with the store on PostgreSQL (a fleet), GET /api/v1/evals shows each repository's latest
// eval as its hosts share it in the store, whichever host ran it — the store's over this host's older files —
// as ace eval report and agent.default = "auto" read it; a repository the fleet has no eval of shows this host's,
// and an eval in another directory than the repository's default one is not its latest.
func TestAPIEvalsOfAFleet(t *testing.T) {
	t.Parallel()
	st, root := fleetEvals(t)
	f := newFixture(t, func(o *Options) { o.Root, o.SharedEvals = root, st })
	got := getEvals(t, f)
	if len(got) != 2 || got[0].Repo != "acme/solo" || got[0].Runs != 1 || got[0].Agents[0].Agent != "gemini" {
		t.Fatalf("evals %+v, want acme/solo's from this host's files, then acme/widgets' from the store", got)
	}
	checkWidgets(t, got[1])
}

// TestDashboardEvalChartInBrowser: in a real Chromium, "Agents on this repository" draws a row per agent of the
// latest eval, its solve rate a bar and its 95% interval an error bar spanning exactly the interval, with the
// interval, cost per solved task and median time in numbers — this host's eval, and on a fleet the one another host
// ran, from the store; a dashboard without an eval shows no such section.
func TestDashboardEvalChartInBrowser(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	widgetsEval(t, underRoot(root))
	f := newFixture(t, func(o *Options) { o.Root = root }, "active/monitor")
	st, fleetRoot := fleetEvals(t)
	fleet := newFixture(t, func(o *Options) { o.Root, o.SharedEvals = fleetRoot, st }, "active/monitor")
	bare := newFixture(t, nil, "active/monitor")
	ctx := browser(t)

	type row struct {
		Agent, Interval, Solved, PerSolved, Median string
		Bar, Low, High                             float64
	}
	want := func(agent string, k, n int, perSolved, median string) row {
		lo, hi := eval.Wilson(k, n)
		rate := float64(k) / float64(n)
		bar := func(v float64) float64 { return math.Round(1600*v) / 10 }
		return row{Agent: agent, Interval: fmt.Sprintf("%.0f%% (%.0f%%–%.0f%%)", 100*rate, 100*lo, 100*hi), Solved: fmt.Sprintf("%d/%d", k, n),
			PerSolved: perSolved, Median: median, Bar: bar(rate), Low: bar(lo), High: bar(hi)}
	}
	wantRows := []row{want("claude@2.1.331", 2, 3, "$0.0300", "20.0s"), want("codex", 1, 4, "$0.2000", "1m15s")}
	// This host's eval, and the same eval on a fleet, run by another host and read from the shared store.
	for _, on := range []struct {
		name string
		f    *fixture
	}{{"this host", f}, {"a fleet", fleet}} {
		err := chromedp.Do(ctx,
			chromedp.Navigate(on.f.http.URL+"/"),
			chromedp.Poll[chromedp.Void](`document.querySelector("#evals").dataset.loaded === "true"`),
		)
		if err != nil {
			t.Fatalf("dashboard of %s: %v", on.name, err)
		}
		rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](`[...document.querySelectorAll('#evals .eval[data-repo="acme/widgets"] tr.agent')].map((tr) => ({
			Agent: tr.dataset.agent, Interval: tr.querySelector("td.rate").textContent, Solved: tr.querySelector(".solved").textContent,
			PerSolved: tr.querySelector(".per-solved").textContent, Median: tr.querySelector(".median").textContent,
			Bar: +tr.querySelector("svg .bar").getAttribute("width"), Low: +tr.querySelector("svg .err.lo").getAttribute("x1"),
			High: +tr.querySelector("svg .err.hi").getAttribute("x1")}))`))
		if err != nil {
			t.Fatalf("read the chart of %s: %v", on.name, err)
		}
		visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.querySelector("#evals").hidden && document.querySelector("#evals").offsetHeight > 0`))
		if err != nil || !visible {
			t.Errorf("%s: the evals section is not shown (%v)", on.name, err)
		}
		if on.f == f {
			screenshot(t, ctx, "dashboard-evals.png")
		}
		if len(rows) != len(wantRows) {
			t.Fatalf("%s: rows %+v, want %+v", on.name, rows, wantRows)
		}
		for i := range rows {
			if rows[i] != wantRows[i] {
				t.Errorf("%s: row %d: %+v, want %+v", on.name, i, rows[i], wantRows[i])
			}
		}
	}

	err := chromedp.Do(ctx,
		chromedp.Navigate(bare.http.URL+"/"),
		chromedp.Poll[chromedp.Void](`document.querySelector("#evals").dataset.loaded === "true"`),
	)
	if err != nil {
		t.Fatalf("the dashboard without an eval: %v", err)
	}
	hidden, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelector("#evals").hidden && document.querySelectorAll("#evals tr.agent").length === 0`))
	if err != nil || !hidden {
		t.Errorf("without an eval the section is shown (%v)", err)
	}
}
