package workflow

import (
	"fmt"

	"github.com/aceworks/ace/pkg/config"
	"github.com/aceworks/ace/pkg/store"
)

// prompts are the texts ace gives an agent: the task, the resume after a restart, the nudge. They read the
// monitor's nudge from the configuration and the run's agent (whether it continues a conversation).
type prompts struct {
	cfg   *config.Config
	agent *runAgent
}

// Prompts are one line: every agent TUI takes a single pasted line the same way, and the task itself is in
// ACE_TASK.md, so nothing long or untrusted is ever typed into a session.

const doneProtocol = "When the task is done, commit your work with git and write a short summary to .ace/DONE. " +
	"If you need a decision from a human, write your question to .ace/QUESTION and stop."

func (pp *prompts) taskPrompt(r *store.Run) string {
	return fmt.Sprintf("Read ACE_TASK.md in this folder: it describes issue #%d of %s, which you are to resolve on branch %s. %s",
		r.Issue, r.Repo, r.Branch, doneProtocol)
}

func (pp *prompts) resumePrompt(r *store.Run) string {
	if w := r.State.ResumeWith; w != "" {
		// A released agent's first message (an answer, the continue after a usage limit), byte-exact where its
		// conversation goes on; an agent that cannot continue one is told where the task stands first.
		if prof, err := pp.agent.profile(r); err == nil && (prof.ContinueCommand != "" || Describe(r).Name() == store.RunnerLive) {
			return w
		}
		return fmt.Sprintf("You were restarted after an interruption. Resume the task in ACE_TASK.md (issue #%d) from "+
			"where the working copy stands: check git status and git log first. %s The message that brought you back: %s", r.Issue, doneProtocol, w)
	}
	// A restarted agent may have no conversation of the run (a new one on the host the run moved to, or one that
	// cannot continue): a round's prompt says where the task is, as the task's does.
	lead := fmt.Sprintf("You were restarted after an interruption; your earlier work is committed on this branch. "+
		"ACE_TASK.md in this folder describes the task, issue #%d of %s. ", r.Issue, r.Repo)
	handover := handoverLead(r) // another agent's run, handed over at a usage limit
	if handover != "" {
		lead = handover
	}
	if f := r.State.Follow; f != nil && f.InRound && f.Prompt != "" {
		return lead + f.Prompt
	}
	if w := r.State.Workflow; w != nil && w.VerifyPrompt != "" {
		return lead + w.VerifyPrompt
	}
	if handover != "" {
		return handover + "Continue from where the working copy stands: check git status and git log first. " + doneProtocol
	}
	return fmt.Sprintf("You were restarted after an interruption. Resume the task in ACE_TASK.md (issue #%d) from where "+
		"the working copy stands: check git status and git log first. %s", r.Issue, doneProtocol)
}

// handoverLead opens the prompt of an agent that took the run over, while the handover is in the working copy;
// "" otherwise.
func handoverLead(r *store.Run) string {
	h, ok := r.State.Fallback.Last()
	if !ok || h.To != r.Agent || !hasWorkCopy(r) {
		return ""
	}
	if !workCopy(r).Exists(handoverFile) {
		return ""
	}
	return fmt.Sprintf("You take over issue #%d of %s from another agent (%s), which stopped at a usage limit. "+
		"Read ACE_TASK.md for the task and %s for what was done so far; the work is in this working copy, committed or not. ",
		r.Issue, r.Repo, h.From, handoverFile)
}

func (pp *prompts) nudgePrompt() string {
	return pp.cfg.Monitor.Nudge + ". " + doneProtocol
}

// promptText is what deliver_prompt pastes: the task, or the resume prompt after a restart.
func (pp *prompts) promptText(r *store.Run) string {
	if r.State.Resume {
		return pp.resumePrompt(r)
	}
	return pp.taskPrompt(r)
}
