package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/usage"
)

// evalRun is one scored run of a test's eval.
type evalRun struct {
	task, agent string
	solved      bool
	cost, secs  float64
	invalid     string
}

// writeEval writes results as ace eval run does, where it keeps a repository's latest eval under root.
func writeEval(t *testing.T, root, repo string, runs ...evalRun) {
	t.Helper()
	dir := eval.DirBeside(eval.DefaultTasks(root, repo))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i, r := range runs {
		res := eval.RunResult{Item: eval.Item{N: i + 1, InstanceID: r.task, Agent: r.agent, Run: 1}, Repo: repo,
			Status: "done", Solved: r.solved, Invalid: r.invalid, Usage: usage.Usage{InputTokens: 1000, OutputTokens: 100, CostUSD: r.cost},
			WallSeconds: r.secs, CLIVersion: "2.1.331", Model: "scripted", ScoredAt: time.Date(2026, 11, 27, 10, i, 0, 0, time.UTC)}
		if err := eval.WriteResult(dir, res); err != nil {
			t.Fatal(err)
		}
	}
}

// widgetsEval is acme/widgets' eval: claude solves 2 of 3 ($0.06 in all, median 20s); codex 1 of 4 ($0.20, median
// 75s), and one more run of codex that does not count.
func widgetsEval(t *testing.T, root string) {
	writeEval(t, root, "acme/widgets",
		evalRun{"acme__widgets-1", "claude@2.1.331", true, 0.01, 10, ""},
		evalRun{"acme__widgets-2", "claude@2.1.331", true, 0.02, 40, ""},
		evalRun{"acme__widgets-3", "claude@2.1.331", false, 0.03, 20, ""},
		evalRun{"acme__widgets-1", "codex", true, 0.05, 30, ""},
		evalRun{"acme__widgets-2", "codex", false, 0.05, 120, ""},
		evalRun{"acme__widgets-3", "codex", false, 0.05, 60, ""},
		evalRun{"acme__widgets-4", "codex", false, 0.05, 90, ""},
		evalRun{"acme__widgets-4", "codex", true, 9, 9, "codex ran release \"0.1\", not 0.2"})
}

// TestAPIEvalsByRepositoryAndAgent: GET /api/v1/evals sums each repository's latest eval up by agent as ace eval
// report does — the solve rate over the scored runs with its Wilson interval, cost per solved task, median time —
// leaves out a repository whose eval has no results yet, and asks for the token like every other route.
func TestAPIEvalsByRepositoryAndAgent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	widgetsEval(t, root)
	writeEval(t, root, "acme/empty") // ace eval run made the directory, nothing is scored yet
	f := newFixture(t, func(o *Options) { o.Root = root })
	resp := f.do("GET", "/api/v1/evals", "", nil)
	var got struct{ Evals []eval.Latest }
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /api/v1/evals: %d %v", resp.StatusCode, err)
	}
	if len(got.Evals) != 1 || got.Evals[0].Repo != "acme/widgets" || got.Evals[0].Runs != 8 || len(got.Evals[0].Tasks) != 4 ||
		!got.Evals[0].ScoredAt.Equal(time.Date(2026, 11, 27, 10, 7, 0, 0, time.UTC)) || len(got.Evals[0].Agents) != 2 {
		t.Fatalf("evals %+v", got.Evals)
	}
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	c, x := got.Evals[0].Agents[0], got.Evals[0].Agents[1]
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

// TestDashboardEvalChartInBrowser: in a real Chromium, "Agents on this repository" draws a row per agent of the
// latest eval, its solve rate a bar and its 95% interval an error bar spanning exactly the interval, with the
// interval, cost per solved task and median time in numbers; a dashboard without an eval shows no such section.
func TestDashboardEvalChartInBrowser(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	widgetsEval(t, root)
	f := newFixture(t, func(o *Options) { o.Root = root }, "active/monitor")
	bare := newFixture(t, nil, "active/monitor")
	ctx := browser(t)

	type row struct {
		Agent, Interval, Solved, PerSolved, Median string
		Bar, Low, High                             float64
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(f.http.URL+"/"),
		chromedp.Poll[chromedp.Void](`document.querySelector("#evals").dataset.loaded === "true"`),
	)
	if err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	rows, err := chromedp.Run(ctx, chromedp.Evaluate[[]row](`[...document.querySelectorAll('#evals .eval[data-repo="acme/widgets"] tr.agent')].map((tr) => ({
			Agent: tr.dataset.agent, Interval: tr.querySelector("td.rate").textContent, Solved: tr.querySelector(".solved").textContent,
			PerSolved: tr.querySelector(".per-solved").textContent, Median: tr.querySelector(".median").textContent,
			Bar: +tr.querySelector("svg .bar").getAttribute("width"), Low: +tr.querySelector("svg .err.lo").getAttribute("x1"),
			High: +tr.querySelector("svg .err.hi").getAttribute("x1")}))`))
	if err != nil {
		t.Fatalf("read the chart: %v", err)
	}
	visible, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`!document.querySelector("#evals").hidden && document.querySelector("#evals").offsetHeight > 0`))
	if err != nil || !visible {
		t.Errorf("the evals section is not shown (%v)", err)
	}
	screenshot(t, ctx, "dashboard-evals.png")
	want := func(agent string, k, n int, perSolved, median string) row {
		lo, hi := eval.Wilson(k, n)
		rate := float64(k) / float64(n)
		bar := func(v float64) float64 { return math.Round(1600*v) / 10 }
		return row{Agent: agent, Interval: fmt.Sprintf("%.0f%% (%.0f%%–%.0f%%)", 100*rate, 100*lo, 100*hi), Solved: fmt.Sprintf("%d/%d", k, n),
			PerSolved: perSolved, Median: median, Bar: bar(rate), Low: bar(lo), High: bar(hi)}
	}
	wantRows := []row{want("claude@2.1.331", 2, 3, "$0.0300", "20.0s"), want("codex", 1, 4, "$0.2000", "1m15s")}
	if len(rows) != len(wantRows) {
		t.Fatalf("rows %+v, want %+v", rows, wantRows)
	}
	for i := range rows {
		if rows[i] != wantRows[i] {
			t.Errorf("row %d: %+v, want %+v", i, rows[i], wantRows[i])
		}
	}

	err = chromedp.Do(ctx,
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
