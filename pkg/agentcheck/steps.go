package agentcheck

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/modelserver"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workflow"
)

// issueToPR drives the run from the labelled issue to its pull request, answering the agent's question on the
// issue as a human would, and judges each step by what the model was shown and what ace recorded.
func (d *driver) issueToPR(ctx context.Context, prof agents.Profile) []Step {
	d.drive(ctx, workflow.UntilSettled)
	asked := d.run != nil && d.run.Status == store.StatusWaitingInput && d.onIssue(ctx, question)
	if asked {
		if _, err := d.lt.AddComment(ctx, repoName, issue, "you", answer); err == nil {
			d.drive(ctx, func(r *store.Run) bool {
				return r.Status.Terminal() || r.Status == store.StatusWaitingInput && r.State.Questions > 1
			})
		}
	}
	ev := d.events()
	vs := []verdict{
		{StepStart, len(ev["prompt"]) > 0, startDetail(ev)},
		{StepTask, d.srv.SawToolOutput(issueLine), "the model read ACE_TASK.md with the CLI's own file tool and saw the issue byte-exact"},
		{StepApproval, d.srv.SawToolOutput(approvalMark), approvalDetail(ev, d.srv.SawToolOutput(approvalMark))},
		{StepQuestion, asked && d.answered(prof), questionDetail(prof, asked)},
		d.commit(ctx),
		d.usage(),
	}
	if !vs[1].ok {
		vs[1].detail = "the model did not see the issue through the CLI's file tool"
	}
	return d.steps(vs)
}

// onIssue reports whether ace posted text on the issue.
func (d *driver) onIssue(ctx context.Context, text string) bool {
	comments, err := d.lt.Comments(ctx, repoName, issue, time.Time{})
	if err != nil {
		return false
	}
	for _, c := range comments {
		if strings.Contains(c.Body, text) {
			return true
		}
	}
	return false
}

func startDetail(ev map[string][]string) string {
	if len(ev["prompt"]) == 0 {
		return "the agent did not take the prompt"
	}
	if len(ev["dialog"]) == 0 {
		return "the agent took the prompt (no first-run dialog)"
	}
	return "ace answered its first-run screens (" + strings.Join(ev["dialog"], "; ") + "); the agent took the prompt"
}

func approvalDetail(ev map[string][]string, ran bool) string {
	n := len(ev["approved"])
	if !ran {
		return fmt.Sprintf("the shell command's output did not reach the model (ace answered %d permission prompt(s))", n)
	}
	if n > 0 {
		return fmt.Sprintf("a shell command ran; ace answered %d permission prompt(s) by their options' meaning", n)
	}
	return "a shell command ran (the CLI asked no permission for it)"
}

func questionDetail(prof agents.Profile, asked bool) string {
	switch {
	case !asked:
		return "the agent's question did not reach the issue"
	case prof.QuestionTool != "":
		return "the " + prof.QuestionTool + " menu went to the issue; the human's free-text answer reached the model as the tool's result"
	}
	return "the question in .ace/QUESTION went to the issue; the human's answer reached the model"
}

// commit: the agent's own commit is on the pushed branch and the pull request is open.
func (d *driver) commit(ctx context.Context) verdict {
	v := verdict{name: StepCommit}
	if d.run == nil || d.run.Status != store.StatusDone || d.run.PRNumber == 0 {
		v.detail = "no pull request"
		if d.run != nil && d.run.PRNumber != 0 {
			v.detail = fmt.Sprintf("pull request #%d, but the run is not done", d.run.PRNumber)
		}
		return v
	}
	log, err := gitOut(ctx, d.w.remote, "log", "--format=%s", "main.."+d.run.Branch)
	if err != nil || !strings.Contains(log, commitMsg) {
		v.detail = fmt.Sprintf("pull request #%d opened, but the agent's own commit is not on %s", d.run.PRNumber, d.run.Branch)
		return v
	}
	v.ok, v.detail = true, fmt.Sprintf("the agent's commit on %s, pull request #%d opened", d.run.Branch, d.run.PRNumber)
	return v
}

// usage: the tokens ace read from the CLI (its session files) equal what the model server billed for the
// conversation, kind by kind. The agent's last reply may still be in flight when ace closes the session (billed,
// never recorded): then the bill before it.
func (d *driver) usage() verdict {
	v := verdict{name: StepUsage}
	if d.run == nil || d.run.Status != store.StatusDone {
		return v
	}
	got := d.run.State.Usage
	reqs := d.srv.ModelRequests()
	want := billed(reqs)
	if got == nil {
		v.detail = fmt.Sprintf("ace read no usage; the model billed %d input and %d output tokens", want.InputTokens, want.OutputTokens)
		return v
	}
	same := func(w modelserver.Usage) bool {
		return got.InputTokens == w.InputTokens && got.OutputTokens == w.OutputTokens &&
			got.CacheReadTokens == w.CacheReadTokens && got.CacheWriteTokens == w.CacheWriteTokens
	}
	if !same(want) && len(reqs) > 1 && same(billed(reqs[:len(reqs)-1])) {
		want = billed(reqs[:len(reqs)-1])
	}
	v.ok = same(want) && want.InputTokens > 0
	v.detail = fmt.Sprintf("ace read %d input, %d output, %d cache-read tokens; the model billed %d, %d, %d",
		got.InputTokens, got.OutputTokens, got.CacheReadTokens, want.InputTokens, want.OutputTokens, want.CacheReadTokens)
	return v
}

func billed(reqs []modelserver.Request) modelserver.Usage {
	var u modelserver.Usage
	for _, q := range reqs {
		u.Add(q.Usage)
	}
	return u
}

// limitWindow is how long the model answers with the usage-limit error: longer than the phase, so the check
// sees the pause and never waits for the reset.
const limitWindow = 30 * time.Minute

// limit: the model answers every request with the provider's usage-limit error; ace must recognise it from
// what the CLI shows and pause the run with a resume time, asking no human and spending no nudge.
func (d *driver) limit(ctx context.Context) []Step {
	d.srv.FailFor(limitWindow, modelserver.Failure{Kind: modelserver.UsageLimit})
	d.drive(ctx, func(r *store.Run) bool { return r.Status == store.StatusPausedLimit || workflow.UntilSettled(r) })
	v := verdict{name: StepLimit, detail: "the usage-limit reply did not pause the run"}
	if d.run != nil && d.run.Status == store.StatusPausedLimit {
		v.ok = true
		v.detail = "the run paused at the usage limit until " + d.run.State.ResumeAt.Format(time.RFC3339)
		if d.run.State.Limit != nil && d.run.State.Limit.Message != "" {
			v.detail += fmt.Sprintf(" (the CLI said %q)", firstLine(d.run.State.Limit.Message))
		}
		if d.run.Nudges > 0 || d.run.State.Questions > 0 {
			v.ok = false
			v.detail += fmt.Sprintf(", but it cost %d nudge(s) and %d question(s)", d.run.Nudges, d.run.State.Questions)
		}
	}
	return d.steps([]verdict{v})
}
