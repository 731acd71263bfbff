package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/sanitize"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/transcript"
	"github.com/aceworks/ace/pkg/workspace"
)

// verifyTail bounds the end of a failed verify's output given to the agent: this much in .ace/VERIFY.md, a
// flattened part of it in the prompt itself.
const (
	verifyTail       = 8 << 10
	verifyPromptTail = 1500
)

// verifyBeforePR runs the workflow's verify command at finalize, once the agent's work is committed. ok is false
// when finalize goes on to push: verify passed, there is none, or the rounds are used up (the pull request then
// opens as a draft saying what failed). Otherwise the failure went back to the agent and res is its next step.
func (fl *repoFlow) verifyBeforePR(ctx context.Context, r *store.Run, ws *workspace.Workspace) (res Result, ok bool, err error) {
	wf, err := fl.repoWorkflow(ctx, r)
	if err != nil {
		return Result{}, true, err
	}
	m, hasMirror := fl.mirrors, fl.mirrors != nil
	if wf.Verify == nil || !hasMirror {
		return Result{}, false, nil
	}
	head, err := ws.Head(ctx)
	if err != nil {
		return Result{}, true, fmt.Errorf("read the working copy's head: %w", err)
	}
	st := cloneWorkflowState(r.State.Workflow)
	if st.VerifiedHead == head && (st.VerifyPassed || st.VerifyRounds >= wf.PR.MaxRounds) {
		return Result{}, false, nil // decided at this commit already (finalize retried after a push failed)
	}
	red, _, err := fl.workflowSecrets(ctx, r, wf)
	if err != nil {
		return Result{}, true, err
	}
	env, err := fl.commandEnv(r, m, wf, red)
	if err != nil {
		return Result{}, true, err
	}
	cmd := config.Command(wf.Verify).String()
	fl.core.event(ctx, r, "workflow", "verify: running `"+cmd+"`")
	vctx, cancel := context.WithTimeout(ctx, wf.VerifyTimeout.Duration)
	out, runErr := fl.runCommand(vctx, r, "verify", wf.Verify, env, red)
	timedOut := vctx.Err() != nil
	cancel()
	if runErr != nil && ctx.Err() != nil {
		return Result{}, true, ctx.Err()
	}
	st.VerifiedHead, st.VerifyCommand = head, cmd
	if runErr == nil {
		st.VerifyPassed, st.VerifyFailure, st.VerifyPrompt = true, "", ""
		r.State.Workflow = st
		fl.core.event(ctx, r, "workflow", "verify: `"+cmd+"` passed")
		return Result{}, false, nil
	}
	why := runErr.Error()
	if timedOut {
		why = fmt.Sprintf("did not finish within verify_timeout (%s)", wf.VerifyTimeout.Duration)
	}
	st.VerifyPassed = false
	st.VerifyFailure = fmt.Sprintf("`%s` failed (%s)", cmd, flatten(why, 200))
	tail := transcript.Last(out, verifyTail)
	if st.VerifyRounds >= wf.PR.MaxRounds {
		st.VerifyPrompt = ""
		r.State.Workflow = st
		fl.core.event(ctx, r, "workflow", fmt.Sprintf("verify: %s after %d round(s); the pull request opens as a draft", st.VerifyFailure, st.VerifyRounds))
		return Result{}, false, nil
	}
	st.VerifyRounds++
	if err := removeProtocolFile(r, doneFile); err != nil {
		return Result{}, true, fl.core.needFile(ctx, r, "start the verify round", err)
	}
	details := fmt.Sprintf("# Verify failed\n\nBefore opening the pull request ace ran `%s` in this working copy; it %s. "+
		"This file was written by ace; it is not part of the repository. The end of the command's output:\n\n%s\n",
		cmd, flatten(why, 200), quote(sanitize.Clean(tail)))
	if err := workCopy(r).WriteFile(verifyFile, []byte(details), 0o644); err != nil {
		return Result{}, true, fl.core.needFile(ctx, r, "write "+verifyFile, err)
	}
	st.VerifyPrompt = fmt.Sprintf("Verify round %d of %d: before opening the pull request ace ran `%s` in this working copy and it "+
		"failed (%s). The end of its output: %s — the longer tail is in %s. Fix this on the same branch, commit your work with "+
		"git and write a short summary to .ace/DONE again. If you need a decision from a human, write your question to "+
		".ace/QUESTION and stop.", st.VerifyRounds, wf.PR.MaxRounds, cmd, flatten(why, 200), flatten(tail, verifyPromptTail), verifyFile)
	r.State.Workflow = st
	r.State.Summary = ""
	r.Nudges, r.State.NudgedAt = 0, time.Time{}
	headline := fmt.Sprintf("verify round %d/%d: %s; the agent is fixing it", st.VerifyRounds, wf.PR.MaxRounds, st.VerifyFailure)
	fl.core.event(ctx, r, "round", headline)
	if err := fl.status.postStatus(ctx, r, statusView{Headline: headline}); err != nil {
		fl.log.WarnContext(ctx, "status comment", "run", r.ID, "err", err) // the round matters more than its report
	}
	res, err = fl.follow.deliverFollowUp(ctx, r, st.VerifyPrompt, fmt.Sprintf("verify round %d delivered", st.VerifyRounds))
	return res, true, err
}

// labelPR puts the workflow's labels on the pull request ace opened; a label that cannot be added is reported,
// never a reason to fail a run whose pull request is open.
func (fl *repoFlow) labelPR(ctx context.Context, r *store.Run, number int) {
	wf, err := fl.repoWorkflow(ctx, r)
	if err != nil || len(wf.Labels) == 0 {
		return
	}
	if err := fl.tracker.AddLabels(ctx, r.Repo, number, wf.Labels...); err != nil {
		fl.log.WarnContext(ctx, "label the pull request", "run", r.ID, "pr", number, "err", err)
		fl.core.event(ctx, r, "workflow", "could not label the pull request: "+err.Error())
	}
}
