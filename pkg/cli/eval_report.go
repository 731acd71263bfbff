package cli

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/eval"
	"github.com/aceworks/ace/pkg/service"
)

type evalReportOptions struct {
	Repo, Tasks, Dir, Format, By string
	MinRuns                      int
	// Compare is "A,B": B against A.
	Compare string
}

// evalReport is `ace eval report --format json`'s output: the report and the agent it recommends.
type evalReport struct {
	eval.Report
	MinRuns int              `json:"min_runs"`
	Best    *eval.Choice     `json:"best"`
	Compare *eval.Comparison `json:"compare,omitempty"`
}

func newCmdEvalReport(app *App) *cobra.Command {
	var o evalReportOptions
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Sum up ace eval run's results: each agent's solve rate, cost and time, and who solved which task",
		Long: `Report reads the results ace eval run wrote and prints, per agent (two releases of one CLI, as
--agents named them, side by side): its scored runs, how many solved their task, the solve rate with its 95%
interval (Wilson's), what its runs cost in all and per task solved, and their median wall time; then per task,
how many of each agent's runs solved it; last, the agent with the best solve rate per dollar among those with at
least --min-runs scored runs. --format csv prints the agents' table, or with --by task the tasks'.

--compare A,B sets agent B against agent A — a canary of a new release, claude@2.1.331,claude@2.1.332: the
difference in solve rate with its 95% interval (Newcombe's), in the cost of a run and in median time, and each
task on which they differ.

With the store on PostgreSQL (a fleet), it reads the results every host kept there (ace eval run's shared eval).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runEvalReport(cmd.Context(), app, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.Repo, "repo", "", "repository `owner/name` (default: the only one configured)")
	f.StringVar(&o.Tasks, "tasks", "", "the task set `file` the eval ran (its directory's default is beside it)")
	f.StringVar(&o.Dir, "dir", "", "the eval's `directory` (default: as ace eval run's)")
	f.StringVar(&o.Format, "format", "text", "`text`, json or csv")
	f.StringVar(&o.By, "by", "agent", "the table --format csv prints: `agent` or task")
	f.IntVar(&o.MinRuns, "min-runs", 10, "scored runs an agent needs to be recommended")
	f.StringVar(&o.Compare, "compare", "", "set agent B against agent A (`A,B`, as --agents named them): a release against the one before")
	return cmd
}

func runEvalReport(ctx context.Context, app *App, o evalReportOptions) error {
	switch {
	case o.Format != "text" && o.Format != "json" && o.Format != "csv":
		return flagErrorf("--format %q: want text, json or csv", o.Format)
	case o.By != "agent" && o.By != "task":
		return flagErrorf("--by %q: want agent or task", o.By)
	}
	dir := o.Dir
	fleet := app.Config.Store.URL != ""
	var repo string
	if dir == "" || fleet {
		var err error
		if repo, err = service.ConfiguredRepo(app.Config, o.Repo); err != nil {
			return &FlagError{err}
		}
		if _, dir, err = evalPaths(app.Config, repo, o.Tasks, o.Dir); err != nil {
			return err
		}
	}
	var shared eval.SharedResults // a fleet's eval: every host's results, from the store
	if fleet {
		book, closeBook, err := evalBook(ctx, app.Config, repo, dir, app)
		if err != nil {
			return err
		}
		defer closeBook()
		shared = book.Store
	}
	results, err := eval.ReadEval(ctx, shared, repo, dir)
	if err != nil {
		return err
	}
	if len(results) == 0 {
		return fmt.Errorf("no results in %s: run ace eval run first", dir)
	}
	rep := evalReport{Report: eval.Summarize(results), MinRuns: o.MinRuns}
	if c, ok := rep.Report.Best(o.MinRuns); ok {
		rep.Best = &c
	}
	if o.Compare != "" {
		a, b, ok := strings.Cut(o.Compare, ",")
		if !ok || a == "" || b == "" || strings.Contains(b, ",") {
			return flagErrorf("--compare %q: want A,B", o.Compare)
		}
		c, err := rep.Report.Compare(strings.TrimSpace(a), strings.TrimSpace(b))
		if err != nil {
			return flagErrorf("--compare: %v", err)
		}
		rep.Compare = &c
	}
	switch o.Format {
	case "json":
		enc := json.NewEncoder(app.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	case "csv":
		return writeReportCSV(app.Stdout, rep.Report, o.By)
	}
	printReport(app.Stdout, rep.Report, dir)
	if rep.Compare != nil {
		printComparison(app.Stdout, *rep.Compare)
	}
	if rep.Best != nil {
		fmt.Fprintf(app.Stdout, "\nbest per dollar: %s — %s\n", rep.Best.Agent, rep.Best.Why)
	} else {
		fmt.Fprintf(app.Stdout, "\nno agent to recommend: none has %d scored runs that solved a task (--min-runs)\n", o.MinRuns)
	}
	return nil
}

func printReport(w io.Writer, rep eval.Report, dir string) {
	fmt.Fprintf(w, "%s: %d runs of %d tasks by %d agents (%s)\n\n", rep.Repo, rep.Runs, len(rep.Tasks), len(rep.Agents), dir)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "agent\truns\tsolved\trate\t95% interval\tcost\tper solved\tmedian time\tCLI\tmodel")
	for _, a := range rep.Agents {
		perSolved := "—"
		if a.CostPerSolved != nil {
			perSolved = fmt.Sprintf("$%.4f", *a.CostPerSolved)
		}
		runs := strconv.Itoa(a.Runs)
		if a.NotScored > 0 {
			runs += fmt.Sprintf(" (+%d not scored)", a.NotScored)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f%%\t%.0f%%–%.0f%%\t$%.4f\t%s\t%s\t%s\t%s\n", a.Agent, runs, a.Solved, 100*a.Rate,
			100*a.Low, 100*a.High, a.CostUSD, perSolved, time.Duration(a.MedianSeconds*float64(time.Second)).Round(100*time.Millisecond),
			orDash(strings.Join(a.CLIVersions, " ")), orDash(strings.Join(a.Models, " ")))
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := []string{"task"}
	for _, a := range rep.Agents {
		head = append(head, a.Agent)
	}
	fmt.Fprintln(tw, strings.Join(append(head, "solved by"), "\t"))
	for _, t := range rep.Tasks {
		row := []string{t.InstanceID}
		for _, a := range rep.Agents {
			row = append(row, fmt.Sprintf("%d/%d", t.Solved[a.Agent], t.Runs[a.Agent]))
		}
		fmt.Fprintln(tw, strings.Join(append(row, orDash(strings.Join(t.SolvedBy, ", "))), "\t"))
	}
	tw.Flush()
}

// printComparison is B against A: each measure of both, and the difference.
func printComparison(w io.Writer, c eval.Comparison) {
	secs := func(s float64) time.Duration {
		return time.Duration(s * float64(time.Second)).Round(100 * time.Millisecond)
	}
	fmt.Fprintf(w, "\n%s against %s:\n", c.B.Agent, c.A.Agent)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "  solve rate\t%.0f%% (%d/%d)\t%.0f%% (%d/%d)\t%+.0f points, 95%% interval %+.0f to %+.0f\n", 100*c.A.Rate, c.A.Solved, c.A.Runs,
		100*c.B.Rate, c.B.Solved, c.B.Runs, 100*c.RateDiff, 100*c.RateLow, 100*c.RateHigh)
	sign := "+"
	if c.CostDiff < 0 {
		sign = "-"
	}
	fmt.Fprintf(tw, "  cost a run\t$%.4f\t$%.4f\t%s$%.4f\n", c.CostPerRunA, c.CostPerRunB, sign, math.Abs(c.CostDiff))
	fmt.Fprintf(tw, "  median time\t%s\t%s\t%+.1fs\n", secs(c.A.MedianSeconds), secs(c.B.MedianSeconds), c.MedianDiff)
	tw.Flush()
	if len(c.Tasks) == 0 {
		fmt.Fprintln(w, "  tasks where they differ: none")
		return
	}
	fmt.Fprintln(w, "  tasks where they differ (solved/runs):")
	for _, t := range c.Tasks {
		fmt.Fprintf(w, "    %s  %s %d/%d, %s %d/%d\n", t.InstanceID, c.A.Agent, t.SolvedA, t.RunsA, c.B.Agent, t.SolvedB, t.RunsB)
	}
}

func writeReportCSV(w io.Writer, rep eval.Report, by string) error {
	cw := csv.NewWriter(w)
	if by == "task" {
		head := []string{"instance_id"}
		for _, a := range rep.Agents {
			head = append(head, a.Agent+" solved", a.Agent+" runs")
		}
		_ = cw.Write(head)
		for _, t := range rep.Tasks {
			row := []string{t.InstanceID}
			for _, a := range rep.Agents {
				row = append(row, strconv.Itoa(t.Solved[a.Agent]), strconv.Itoa(t.Runs[a.Agent]))
			}
			_ = cw.Write(row)
		}
	} else {
		_ = cw.Write([]string{"agent", "runs", "solved", "not_scored", "solve_rate", "solve_rate_low", "solve_rate_high", "cost_usd",
			"cost_per_solved_usd", "tokens", "median_seconds", "cli_versions", "models"})
		for _, a := range rep.Agents {
			perSolved := ""
			if a.CostPerSolved != nil {
				perSolved = ftoa(*a.CostPerSolved)
			}
			_ = cw.Write([]string{a.Agent, strconv.Itoa(a.Runs), strconv.Itoa(a.Solved), strconv.Itoa(a.NotScored), ftoa(a.Rate),
				ftoa(a.Low), ftoa(a.High), ftoa(a.CostUSD), perSolved, strconv.FormatInt(a.Tokens, 10), ftoa(a.MedianSeconds),
				strings.Join(a.CLIVersions, " "), strings.Join(a.Models, " ")})
		}
	}
	cw.Flush()
	return cw.Error()
}

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
