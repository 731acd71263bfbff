package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/tracker"
)

// reporter keeps the issue saying where the run stands: its one status comment and its labels.
type reporter struct {
	core    reporterCore
	tracker reporterTracker
	spend   *spending // what the agent spent, refreshed for the comment
	now     func() time.Time
}

// reporterCore is what the reporter needs of the engine's core: the run's events.
type reporterCore interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
}

// reporterTracker is the tracker as the reporter uses it: the issue's comments and labels.
type reporterTracker interface {
	FindComment(ctx context.Context, repo string, number int, marker string) (*tracker.Comment, error)
	CreateComment(ctx context.Context, repo string, number int, body string) (*tracker.Comment, error)
	EditComment(ctx context.Context, repo string, id int64, body string) (*tracker.Comment, error)
	AddLabels(ctx context.Context, repo string, number int, labels ...string) error
	RemoveLabel(ctx context.Context, repo string, number int, label string) error
}

// StatusMarker identifies ace's sticky status comment, so that a restarted ace edits it instead of posting another.
const StatusMarker = "<!-- ace:status -->"

// statusView is what the sticky status comment shows.
type statusView struct {
	Headline string // one line: what is happening
	Detail   string // optional Markdown below the table (a question, a last screen, a reason)
	// Status is the status the run is moving to, shown before the move is saved ("": the run's own). The
	// comment goes first: if it cannot be posted, the move is retried and nothing was changed.
	Status store.Status
}

func (rp *reporter) renderStatus(run *store.Run, v statusView) string {
	r := run
	if v.Status != "" {
		c := *run
		c.Status = v.Status
		r = &c
	}
	var b strings.Builder
	b.WriteString(StatusMarker + "\n")
	fmt.Fprintf(&b, "**ace** · %s\n\n", v.Headline)
	b.WriteString("| | |\n|---|---|\n")
	fmt.Fprintf(&b, "| state | `%s` |\n", stateLabel(r))
	fmt.Fprintf(&b, "| attempt | %d |\n", r.Attempt)
	fmt.Fprintf(&b, "| agent | %s |\n", strings.TrimSpace(r.Agent+" "+r.State.AgentCLI.String()))
	b.WriteString(bestOfRow(r)) // the parts' rows: lines.go
	if h := handoversLine(r); h != "" {
		fmt.Fprintf(&b, "| handed over | %s |\n", h)
	}
	if r.Branch != "" {
		fmt.Fprintf(&b, "| branch | `%s` |\n", r.Branch)
	}
	if d := Describe(r); d.Session(r) != "-" {
		fmt.Fprintf(&b, "| session | %s (`%s`) |\n", d.Where(r), d.Watch(r))
	}
	if r.PRURL != "" {
		fmt.Fprintf(&b, "| pull request | %s |\n", r.PRURL)
	}
	if r.State.Usage != nil {
		fmt.Fprintf(&b, "| usage | %s |\n", UsageLine(r.State.Usage))
	}
	b.WriteString(runbox.StatusRow(r))
	b.WriteString(refusedFilesRow(r))
	b.WriteString(reachRow(r))
	if r.Status == store.StatusPausedLimit {
		fmt.Fprintf(&b, "| resumes | %s |\n", r.State.ResumeAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(&b, "| updated | %s |\n", rp.now().UTC().Format(time.RFC3339))
	if v.Detail != "" {
		b.WriteString("\n" + v.Detail + "\n")
	}
	return b.String()
}

func stateLabel(r *store.Run) string {
	if r.Status == store.StatusActive {
		return r.Step
	}
	return string(r.Status)
}

// postStatus creates or edits the sticky status comment. It finds an existing one by its marker before creating,
// so a crash between posting and saving the comment's id never leaves two.
func (rp *reporter) postStatus(ctx context.Context, r *store.Run, v statusView) error {
	if r.State.AttemptOf != nil {
		return nil // a best-of attempt: its parent owns the issue's comment and labels (bestof.go)
	}
	rp.spend.refreshUsage(ctx, r, true) // usage.go: the comment shows what the agent spent up to now
	body := rp.renderStatus(r, v)
	if r.StatusCommentID == 0 {
		c, err := rp.tracker.FindComment(ctx, r.Repo, r.Issue, StatusMarker)
		if err != nil {
			return fmt.Errorf("find status comment: %w", err)
		}
		if c != nil {
			r.StatusCommentID = c.ID
		}
	}
	if r.StatusCommentID != 0 {
		if _, err := rp.tracker.EditComment(ctx, r.Repo, r.StatusCommentID, body); err != nil {
			return fmt.Errorf("edit status comment: %w", err)
		}
		return nil
	}
	c, err := rp.tracker.CreateComment(ctx, r.Repo, r.Issue, body)
	if err != nil {
		return fmt.Errorf("post status comment: %w", err)
	}
	r.StatusCommentID = c.ID
	rp.core.event(ctx, r, "comment", "status comment posted")
	return nil
}

// setLabels adds and removes labels on the issue; both are idempotent in every tracker.
func (rp *reporter) setLabels(ctx context.Context, r *store.Run, add []string, remove ...string) error {
	if r.State.AttemptOf != nil {
		return nil
	}
	if len(add) > 0 {
		if err := rp.tracker.AddLabels(ctx, r.Repo, r.Issue, add...); err != nil {
			return fmt.Errorf("add labels %v: %w", add, err)
		}
	}
	for _, l := range remove {
		if err := rp.tracker.RemoveLabel(ctx, r.Repo, r.Issue, l); err != nil {
			return fmt.Errorf("remove label %s: %w", l, err)
		}
	}
	return nil
}
