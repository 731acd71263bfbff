package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/store"
)

func newCmdUsage(app *App) *cobra.Command {
	var by string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Add up the tokens and cost the agents spent, by repository, agent or day",
		Long: `Usage adds up what the agents of every run (every attempt) spent, from the agents' own records: input,
output and cache tokens and the cost in US dollars, by repository (the default), by agent, or by day (UTC, the
day the run was created). A run whose agent reported nothing counts in RUNS but adds no tokens.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUsage(cmd.Context(), app, by, asJSON)
		},
	}
	cmd.Flags().StringVar(&by, "by", "repo", "group by `repo`, agent or day")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the groups as JSON")
	return cmd
}

// usageGroup is one line of `ace usage`: the runs of one repository, agent or day and what they spent.
type usageGroup struct {
	Key  string `json:"key"`
	Runs int    `json:"runs"`
	store.Usage
}

// usageKeys names, per --by, the group a run belongs to.
var usageKeys = map[string]func(*store.Run) string{
	"repo":  func(r *store.Run) string { return r.Repo },
	"agent": func(r *store.Run) string { return r.Agent },
	"day":   func(r *store.Run) string { return r.CreatedAt.UTC().Format("2006-01-02") },
}

func runUsage(ctx context.Context, app *App, by string, asJSON bool) error {
	key, ok := usageKeys[by]
	if !ok {
		return fmt.Errorf("--by %q: want repo, agent or day", by)
	}
	st, err := app.openStore(ctx)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.Filter{})
	if err != nil {
		return err
	}
	groups := sumUsage(runs, key)
	if asJSON {
		enc := json.NewEncoder(app.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(groups)
	}
	if len(groups) == 0 {
		fmt.Fprintln(app.Stdout, "no runs yet: start one with `ace run --issue N` or label an issue and run `ace poll`")
		return nil
	}
	tw := tabwriter.NewWriter(app.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "%s\tRUNS\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\tCOST\n", strings.ToUpper(by))
	var total usageGroup
	for _, g := range groups {
		printUsage(tw, g)
		total.Runs += g.Runs
		total.Usage.Add(g.Usage)
	}
	if len(groups) > 1 {
		total.Key = "total"
		printUsage(tw, total)
	}
	return tw.Flush()
}

// sumUsage groups runs by key, in the order of the keys (days oldest first).
func sumUsage(runs []*store.Run, key func(*store.Run) string) []usageGroup {
	byKey := map[string]*usageGroup{}
	var keys []string
	for _, r := range runs {
		k := key(r)
		g := byKey[k]
		if g == nil {
			g = &usageGroup{Key: k}
			byKey[k] = g
			keys = append(keys, k)
		}
		g.Runs++
		if r.State.Usage != nil {
			g.Usage.Add(*r.State.Usage)
		}
	}
	slices.Sort(keys)
	out := make([]usageGroup, 0, len(keys))
	for _, k := range keys {
		out = append(out, *byKey[k])
	}
	return out
}

func printUsage(tw *tabwriter.Writer, g usageGroup) {
	fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t$%.2f\n", g.Key, g.Runs, g.InputTokens, g.OutputTokens,
		g.CacheReadTokens, g.CacheWriteTokens, g.CostUSD)
}
