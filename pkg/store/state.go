package store

import (
	"time"

	"github.com/aceworks/ace/pkg/usage"
)

// RunState is the engine's bookkeeping for one run: what it has already done and when, so that a restarted ace
// continues where the last one stopped instead of doing a step twice.
//
// It is persisted as one JSON column (runs.state), not as a column per field, on purpose: these fields are only
// ever read and written together with the run, never filtered or ordered on in SQL, and the engine adds and
// drops them as it grows; a JSON column keeps the schema still while Go keeps them typed. What SQL does select
// or order on (repo, issue, status, step, the run's times) is a real column. Zero values are left out of the
// JSON, so that a run's state reads as what has happened to it.
type RunState struct {
	// AgentCLI is the version of the agent's CLI this run started, against the range ace was tested with.
	AgentCLI *CLIVersion `json:"agent_cli,omitzero"`
	// Title is the issue's title, read when the workspace was prepared.
	Title string `json:"title,omitzero"`
	// RemoteURL is the repository's clone URL.
	RemoteURL string `json:"remote_url,omitzero"`
	// Model is the model asked for when the run was started (empty: the agent's configured one).
	Model string `json:"model,omitzero"`
	// AgentAuto says why agent.default = "auto" chose the run's agent (empty: the run's agent was asked for).
	AgentAuto string `json:"agent_auto,omitzero"`
	// Labeled is set once the issue carried the trigger label when the run began: removing it later cancels.
	Labeled bool `json:"labeled,omitzero"`
	// Retries counts the current step's failed attempts; it restarts at each step.
	Retries int `json:"retries,omitzero"`

	// MonitorSince is when the current stretch of monitoring began: monitor.timeout counts from it.
	MonitorSince time.Time `json:"monitor_since,omitzero"`
	// ApprovedAt is when ace last allowed a permission on the agent's screen itself (auto_approve): the menu
	// it answered may stay drawn a moment, and is not answered again meanwhile.
	ApprovedAt time.Time `json:"approved_at,omitzero"`
	// PromptResent counts the Enters ace pressed again on a prompt the agent left unsent in its composer.
	PromptResent int `json:"prompt_resent,omitzero"`
	// PromptHead is the beginning of the prompt deliver_prompt delivered last (the task, or the resume prompt):
	// what the monitor looks for in the composer of an agent that may have left it unsent.
	PromptHead string `json:"prompt_head,omitzero"`
	// IssueChecked is when the issue was last looked at for being closed or unlabeled.
	IssueChecked time.Time `json:"issue_checked,omitzero"`
	// Summary is the agent's .ace/DONE.
	Summary string `json:"summary,omitzero"`

	// Question is the agent's open question to a human; QuestionAt when it was asked; Questions how many it has
	// asked in this run (each gets its own comment).
	Question   string    `json:"question,omitzero"`
	QuestionAt time.Time `json:"question_at,omitzero"`
	Questions  int       `json:"questions,omitzero"`
	// Ask is the question a node decided to ask a human, kept until the ask_human step has posted it.
	Ask *Ask `json:"ask,omitzero"`

	// Remembered is set once the run's outcome went to memory; MemoryPointer names the memory note pointed to in
	// the working copy.
	Remembered    bool   `json:"remembered,omitzero"`
	MemoryPointer string `json:"memory_pointer,omitzero"`

	// AgentState, TmuxState, ExecState and LiveState are the run's part of its current agent process: a handover to another
	// agent or a move to another host drops them together (DropAgent). Embedded, so that the stored JSON stays flat.
	AgentState
	TmuxState
	ExecState
	LiveState

	// Box is the run's sandbox: its agent's home, its proxy, what the proxy refused (package runbox).
	Box *BoxState `json:"box,omitzero"`
	// Reach is the agent failing to reach its model, while it does (reach.go).
	Reach *ReachState `json:"reach,omitzero"`
	// Refused are the files of the run's working copy or agent's home that ace would not read or write — a link
	// out of their tree, not a regular file, over their cap — each once, as "refused <path>: <what was there>"
	// (package untrusted; workflow's agent_files.go).
	Refused []string `json:"refused,omitzero"`

	// Follow is the follow-through of the run's pull request (step follow_pr and its rounds).
	Follow *FollowState `json:"follow,omitzero"`

	// Workflow is what the repository's workflow did in this run: setup, verify and its rounds.
	Workflow *WorkflowState `json:"workflow,omitzero"`
	// Limit is the usage limit the run is paused at, or last was (status paused_limit).
	Limit *LimitState `json:"limit,omitzero"`
	// ResumeAt is when a run paused at a usage limit resumes (UTC); zero when it is not paused.
	ResumeAt time.Time `json:"resume_at,omitzero"`
	// Usage is what the agent spent in this run, from its own records.
	Usage *Usage `json:"usage,omitzero"`
	// Fallback is the run's handovers to another agent at a usage limit (agent.fallback).
	Fallback *FallbackState `json:"fallback,omitzero"`
	// BudgetAsked is set while the run waits for a human because it reached its budget; BudgetGrants counts the
	// answers that let it go on, each worth one more budget of budget.run's size.
	BudgetAsked  bool `json:"budget_asked,omitzero"`
	BudgetGrants int  `json:"budget_grants,omitzero"`
	// InWords is set while the run waits for a human on what its agent said in words — its .ace/QUESTION, its
	// budget — and not on a screen only its process shows (a dialog, a permission, a menu): its idle agent may be
	// stopped for its slot, and the answer is the first message of its conversation continued (slots.go).
	InWords bool `json:"in_words,omitzero"`

	// BestOf is set on a best-of-N parent, AttemptOf on each of its attempts (bestof.go).
	BestOf    *BestOfState  `json:"best_of,omitzero"`
	AttemptOf *AttemptState `json:"attempt_of,omitzero"`
}

// LimitState is what ace knows of a usage limit that paused a run.
type LimitState struct {
	// Message is what the agent said; Shared is set when another run on the same agent hit it.
	Message string `json:"message,omitzero"`
	Shared  bool   `json:"shared,omitzero"`
	// PausedAt is when the run paused; Pauses counts the pauses in a row without a reset time or refused at
	// the reset (for the backoff); Seen is how many limit messages the agent's screen showed when ace last
	// acted on one, so that one still in view is not taken for a new one.
	PausedAt time.Time `json:"paused_at,omitzero"`
	Pauses   int       `json:"pauses,omitzero"`
	Seen     int       `json:"seen,omitzero"`
	// ResumedAt is when the run last resumed from a limit.
	ResumedAt time.Time `json:"resumed_at,omitzero"`
	// StartOver is set when the limited headless conversation was never saved (its first request was refused,
	// and the CLI keeps no conversation without a reply): the resume starts a new one with the task's prompt.
	StartOver bool `json:"start_over,omitzero"`
}

// Usage is an agent's spending: tokens by kind and cost in US dollars (the same count the agents' parsers keep).
type Usage = usage.Usage

// WorkflowState is the run's use of its repository's workflow (.ace/workflow.toml and ace.toml's [repos]).
type WorkflowState struct {
	// Rev is the default branch's commit the workflow file was read at: every step reads the same file.
	Rev string `json:"rev,omitzero"`
	// SetupDone is set once the setup commands succeeded in this working copy.
	SetupDone bool `json:"setup_done,omitzero"`
	// VerifyRounds counts the verify failures sent back to the agent.
	VerifyRounds int `json:"verify_rounds,omitzero"`
	// VerifiedHead is the commit verify last ran at, VerifyCommand the command, VerifyPassed its outcome,
	// VerifyFailure (secrets masked) what failed.
	VerifiedHead  string `json:"verified_head,omitzero"`
	VerifyCommand string `json:"verify_command,omitzero"`
	VerifyPassed  bool   `json:"verify_passed,omitzero"`
	VerifyFailure string `json:"verify_failure,omitzero"`
	// VerifyPrompt is the verify round the agent was sent last (a restarted agent is given it again).
	VerifyPrompt string `json:"verify_prompt,omitzero"`
}

// FollowState is what ace has done about a pull request after it opened: the rounds it sent the agent and what
// it has already reacted to, so that nothing is sent twice.
type FollowState struct {
	// Rounds counts the follow-up rounds sent; InRound is set while one runs (the agent works on it).
	Rounds  int  `json:"rounds,omitzero"`
	InRound bool `json:"in_round,omitzero"`
	// Prompt is the current round's one-line prompt (a restarted agent gets it again); Topic says what the
	// round is about, for the status comment.
	Prompt string `json:"prompt,omitzero"`
	Topic  string `json:"topic,omitzero"`
	// Details is the round's .ace/FOLLOWUP.md while the run has no working copy to write it to (it moved to
	// another host between rounds): kept from the round's start until write_task writes it into the new copy.
	Details string `json:"details,omitzero"`
	// HandledSHA is the head commit whose failed checks and conflict were last sent (a new push resets them).
	HandledSHA string `json:"handled_sha,omitzero"`
	// ReviewSeen, CommentSeen and ReviewCommentSeen are the highest review, conversation comment and review
	// comment ids already considered.
	ReviewSeen        int64 `json:"review_seen,omitzero"`
	CommentSeen       int64 `json:"comment_seen,omitzero"`
	ReviewCommentSeen int64 `json:"review_comment_seen,omitzero"`
	// Failures maps a check's (or status's) name to a digest of the failure last sent for it.
	Failures map[string]string `json:"failures,omitzero"`
	// Tried lists the rounds' topics, for the comment asking a human.
	Tried []string `json:"tried,omitzero"`
	// NeedsHuman is set once ace stopped sending rounds; the pull request is still watched for merge or close.
	NeedsHuman bool `json:"needs_human,omitzero"`
	// CheckedAt is when the pull request was last read.
	CheckedAt time.Time `json:"checked_at,omitzero"`
	// QuietSince is when the pull request was opened or the last round pushed.
	QuietSince time.Time `json:"quiet_since,omitzero"`
}

// CLIVersion is the version of an agent CLI a run started and where it stands against the releases ace's tests
// run (a custom agent's is unknown: Version empty).
type CLIVersion struct {
	Version string `json:"version"`
	Tested  string `json:"tested,omitzero"` // "2.1.197–2.1.331"
	Place   int    `json:"place,omitzero"`  // -1 older than tested, 0 inside, +1 newer
}

// String is how ace show and the status comment say it: "2.1.331 (newer than tested 2.1.197–2.1.331)".
func (v *CLIVersion) String() string {
	if v == nil || v.Version == "" {
		return ""
	}
	switch {
	case v.Tested == "":
		return v.Version
	case v.Place < 0:
		return v.Version + " (older than tested " + v.Tested + ")"
	case v.Place > 0:
		return v.Version + " (newer than tested " + v.Tested + ")"
	}
	return v.Version + " (tested)"
}

// AgentState is what a run knows of the agent process now working on it, whichever runner drives it.
type AgentState struct {
	// PromptDelivered is set once the task prompt is in the agent's session.
	PromptDelivered bool `json:"prompt_delivered,omitzero"`
	// Resume asks the next prompt delivery to continue earlier work (the agent was restarted).
	Resume bool `json:"resume,omitzero"`
	// NudgedAt is when the agent was last nudged.
	NudgedAt time.Time `json:"nudged_at,omitzero"`
	// Tell is what the monitor decided on its idle agent, for the tell_agent step: "idle" (a nudge, or a human
	// asked) or "compact".
	Tell string `json:"tell,omitzero"`
	// LastScreen is the agent's last screen (or last words, headless), shown to a human when the run ends.
	LastScreen string `json:"last_screen,omitzero"`
	// CompactAt is the transcript's size at the agent's last compaction (or its start); HasCompactAt says it was
	// recorded (a run from before compaction existed has none). Compacting is set while a compaction runs.
	CompactAt    int64 `json:"compact_at,omitzero"`
	HasCompactAt bool  `json:"has_compact_at,omitzero"`
	Compacting   bool  `json:"compacting,omitzero"`
	// Released is set when a run whose idle agent was stopped to free its slot (after pr.release_after, or for a
	// run that needed it: store.SlotNone) takes a slot again: the agent's next start continues its conversation,
	// kept in the working copy (the CLI's own continue), instead of beginning anew. ResumeWith is the first message
	// that start gives it (an answer, the continue after a usage limit) in place of the resume prompt, once.
	Released   bool   `json:"released,omitzero"`
	ResumeWith string `json:"resume_with,omitzero"`
	// Boot is the host's boot id (procs.BootID) when the agent last started: another one when it is found gone
	// says the host restarted meanwhile (restart_cause.go).
	Boot string `json:"boot,omitzero"`
}

// TmuxState is what the tmux runner keeps of the agent's terminal: the prompt's delivery and the dialogs
// answered on its way.
type TmuxState struct {
	// DeliverSince is when ace began waiting for the agent's composer to deliver the prompt: after
	// tmux.startup_timeout a human is asked. Dialog names the dialog on screen, DialogScreen a digest of the
	// screen last answered, DialogAt when the dialog was first seen or last answered, DialogAnswers how often ace
	// answered it: a dialog is answered once it has settled, again only after a pause, and a bounded number of
	// times before a human is asked.
	DeliverSince  time.Time `json:"deliver_since,omitzero"`
	Dialog        string    `json:"dialog,omitzero"`
	DialogScreen  string    `json:"dialog_screen,omitzero"`
	DialogAt      time.Time `json:"dialog_at,omitzero"`
	DialogAnswers int       `json:"dialog_answers,omitzero"`
	// PastesLost counts pastes of the prompt the agent never showed (it dropped input while starting).
	PastesLost int `json:"pastes_lost,omitzero"`
	// PastedAt is when ace set out to paste the prompt, saved before the paste: an ace killed between the paste
	// and saving that the prompt was delivered finds, when it comes back, an agent that may have taken it.
	PastedAt time.Time `json:"pasted_at,omitzero"`
	// TmuxServer is the PID of the tmux server the agent was started on: a session found gone on another server,
	// or on none, went with its server (tmux kill-server, a crash, a server ace recovered).
	TmuxServer int `json:"tmux_server,omitzero"`
}

// ExecState is what the headless runner keeps of the agent's conversation, turn by turn.
type ExecState struct {
	// The headless runner: ExecProc is the current turn's supervisor (headless.Proc in its string form), ExecTurn
	// the current (or last) turn, ExecSeen the last turn whose end was recorded, ExecPending a prompt (a nudge,
	// an answer) for the next turn, ExecFormat the stream format and Transcript the JSONL transcript's path.
	ExecProc    string `json:"exec_proc,omitzero"`
	ExecTurn    int    `json:"exec_turn,omitzero"`
	ExecSeen    int    `json:"exec_seen,omitzero"`
	ExecPending string `json:"exec_pending,omitzero"`
	ExecFormat  string `json:"exec_format,omitzero"`
	Transcript  string `json:"transcript,omitzero"`
}

// LiveState is what the live runner keeps of its conversation's transcript (the live host's records).
type LiveState struct {
	// LiveSeq is the last record of the transcript the monitor has read; LiveAsked the pending permission or
	// question it relayed to a human; LiveIdleSince when the last turn ended (a nudge comes after it, once).
	LiveSeq       int64     `json:"live_seq,omitzero"`
	LiveAsked     string    `json:"live_asked,omitzero"`
	LiveIdleSince time.Time `json:"live_idle_since,omitzero"`
	// LivePromptAt is when ace set out to send the prompt, saved before it does: an ace killed between the send
	// and the record that the prompt was delivered finds the prompt in the host's transcript after this time,
	// and does not send it again.
	LivePromptAt time.Time `json:"live_prompt_at,omitzero"`
}

// DropAgent forgets the run's part of its agent process (a handover to another agent, a move to another host):
// the next agent starts afresh and is told to continue the work in the working copy (Resume).
func (s *RunState) DropAgent() {
	s.AgentState, s.TmuxState, s.ExecState, s.LiveState = AgentState{}, TmuxState{}, ExecState{}, LiveState{}
	s.Reach = nil
	if s.Box != nil {
		s.Box.Proxy = "" // the next agent's box has a proxy of its own, on its host (what was refused stays counted)
	}
	if s.Limit != nil && s.Limit.Seen != 0 {
		l := *s.Limit
		l.Seen = 0 // the old agent's limit messages or turns: the next agent's first limit is a new one
		s.Limit = &l
	}
	s.Resume = true
}

// Ask is a question for a human that a node decided on and the ask_human step posts: Message is what the issue
// is asked, Screen what the agent shows (empty when there is none to show); InWords parks the run on what its
// agent said in words, not on a screen only its process shows.
type Ask struct {
	Message string `json:"message"`
	Screen  string `json:"screen,omitzero"`
	InWords bool   `json:"in_words,omitzero"`
}
