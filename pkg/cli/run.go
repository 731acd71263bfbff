package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

type runOptions struct {
	Issue  int
	Repo   string
	Agent  string
	Detach bool
}

func newCmdRun(app *App) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run --issue N",
		Short: "Work on one issue: from claim to pull request",
		Long: `Run drives one issue through ace's graph: claim, working copy, ACE_TASK.md, the agent in tmux, the
prompt, monitoring, push and pull request. An unfinished run of the issue is resumed where it stopped; a
finished one is followed by a new attempt on the same branch.

In the foreground it shows each step until the run is done, failed or waits for a human. Ctrl-C leaves the
agent running; --detach returns once the prompt is delivered (ace poll or a later ace run keeps watching).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Issue <= 0 {
				return flagErrorf("--issue: a positive issue number is required")
			}
			return runRun(cmd.Context(), app, o)
		},
	}
	cmd.Flags().IntVar(&o.Issue, "issue", 0, "issue `number` to work on")
	cmd.Flags().StringVar(&o.Repo, "repo", "", "repository `owner/name` (default: the only one configured)")
	cmd.Flags().StringVar(&o.Agent, "agent", "", "agent `name` (default: agent.default)")
	cmd.Flags().BoolVar(&o.Detach, "detach", false, "return once the prompt is delivered")
	return cmd
}

func runRun(ctx context.Context, app *App, o runOptions) error {
	out := app.Stdout
	var repo string
	// This process works every run of this host's queue while it runs; it shows the steps of its own issue.
	svc, err := app.openWatchingService(ctx, func(p workflow.Progress) {
		if p.Run != nil && p.Run.Repo == repo && p.Run.Issue == o.Issue {
			printProgress(out, p)
		}
	})
	if err != nil {
		return err
	}
	defer svc.Close()
	if repo, err = svc.Repo(ctx, o.Repo); err != nil {
		return err
	}
	if err := svc.StartQueue(ctx); err != nil {
		return err
	}
	r, err := svc.Engine.Open(ctx, workflow.Request{Repo: repo, Issue: o.Issue, Agent: o.Agent, NewAttempt: true})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s#%d: run %d, attempt %d, agent %s, at step %s\n", repo, o.Issue, r.ID, r.Attempt, r.Agent, r.Step)
	stop := workflow.UntilSettled
	if o.Detach {
		stop = workflow.UntilMonitoring
	}
	err = svc.Engine.Follow(ctx, r, stop)
	if errors.Is(err, context.Canceled) {
		d := workflow.Describe(r)
		fmt.Fprintf(out, "\nStopped watching. The agent keeps running (%s).\n", d.Where(r))
		fmt.Fprintf(out, "Come back with `ace run --issue %d`, look with `%s`.\n", o.Issue, d.Watch(r))
		return err
	}
	if err != nil {
		return err
	}
	return reportRun(out, r)
}

// printProgress shows one line per step and per side effect, stamped with the wall clock.
func printProgress(w io.Writer, p workflow.Progress) {
	stamp := time.Now().Format("15:04:05")
	if p.Kind == "step" {
		fmt.Fprintf(w, "%s  → %s\n", stamp, p.Step)
		return
	}
	fmt.Fprintf(w, "%s    %s: %s\n", stamp, p.Kind, p.Message)
}

// reportRun ends `ace run` with the outcome and what to do next.
func reportRun(w io.Writer, r *store.Run) error {
	switch r.Status {
	case store.StatusDone:
		fmt.Fprintf(w, "\ndone: %s\n", r.PRURL)
		return nil
	case store.StatusWaitingInput:
		fmt.Fprintf(w, "\nwaiting for a human: answer on the issue (ace poll relays it), or `ace send %d \"…\"`; the agent: `%s`.\n",
			r.Issue, workflow.Describe(r).Watch(r))
		return nil
	case store.StatusCancelled:
		fmt.Fprintf(w, "\ncancelled: %s\n", r.Error)
		return nil
	case store.StatusClosed:
		fmt.Fprintf(w, "\nclosed: the pull request %s was closed without being merged\n", r.PRURL)
		return nil
	case store.StatusFailed:
		return fmt.Errorf("run %d failed: %s (the working copy is kept at %s)", r.ID, r.Error, r.Workdir)
	}
	if workflow.Step(r.Step) == workflow.StepFollowPR {
		fmt.Fprintf(w, "\npull request %s opened; ace follows it (CI, reviews, conflicts, /ace comments) until it is merged "+
			"while `ace poll` runs.\n", r.PRURL)
		return nil
	}
	d := workflow.Describe(r)
	fmt.Fprintf(w, "\nthe agent is working (%s, `%s`); `ace poll` (or `ace run --issue %d`) keeps watching it.\n", d.Where(r), d.Watch(r), r.Issue)
	return nil
}
