package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
	"github.com/aceworks/ace/pkg/workspace"
)

// Step names a node of the graph. Steps are stored as strings so that a store written by one version of ace
// stays readable by the next.
type Step string

// The steps of ace's graph, in order.
const (
	StepClaim        Step = "claim"
	StepBestOf       Step = "best_of" // a best-of-N parent's: its attempts work, then its pull request (bestof.go)
	StepPrepare      Step = "prepare_workspace"
	StepWriteTask    Step = "write_task"
	StepStartSession Step = "start_session"
	StepDeliver      Step = "deliver_prompt"
	StepMonitor      Step = "monitor"
	StepAsk          Step = "ask_human"  // a question a node decided on, posted on the issue (node_ask.go)
	StepTell         Step = "tell_agent" // what the monitor decided to do to its agent, done (node_tell.go)
	StepHandover     Step = "handover"   // to a fallback agent at a usage limit (node_handover.go)
	StepWaitingInput Step = "waiting_input"
	StepFinalize     Step = "finalize"
	StepReport       Step = "report"
	StepFollowPR     Step = "follow_pr"
	StepDone         Step = "done"
	StepFailed       Step = "failed"
	StepCancelled    Step = "cancelled"
)

// Result is what a node decides: go to another step, or stay and be visited again after Wait; Status, when set,
// is the run's new status (the engine applies both through transition).
type Result struct {
	Next   Step
	Wait   time.Duration
	Status store.Status
	// limit and ask are a runner's reports, of a usage limit it saw and of a human its agent waits for: the
	// node that asked the runner decides on them (Engine.reported, below); they move nothing by
	// themselves.
	limit *limitReport
	ask   *humanAsk
}

// sawLimit is a runner's report of usage limit l, marked seen (limitReport).
func sawLimit(l agents.Limit, seen int) Result {
	return Result{limit: &limitReport{Limit: l, Seen: seen}}
}

// limitSeen is the limit ace last acted on: a count of screen messages (tmux) or a turn number (headless).
func limitSeen(r *store.Run) int {
	if r.State.Limit == nil {
		return 0
	}
	return r.State.Limit.Seen
}

// limitState is the run's limit bookkeeping, made on first use.
func limitState(r *store.Run) *store.LimitState {
	if r.State.Limit == nil {
		r.State.Limit = &store.LimitState{}
	}
	return r.State.Limit
}

// With is r with the run's status set to s.
func (r Result) With(s store.Status) Result {
	r.Status = s
	return r
}

// toHuman parks the run until a human answers (after askHuman).
func toHuman() Result { return Goto(StepWaitingInput).With(store.StatusWaitingInput) }

// Goto moves the run to step s at once.
func Goto(s Step) Result { return Result{Next: s} }

// Stay keeps the run at its step and asks to be visited again after d.
func Stay(d time.Duration) Result { return Result{Wait: d} }

// TerminalError is an error that retrying will not fix: the run goes to failed at once.
type TerminalError struct{ Err error }

func (e *TerminalError) Error() string { return e.Err.Error() }
func (e *TerminalError) Unwrap() error { return e.Err }

// Terminal marks err as not worth retrying.
func Terminal(err error) error {
	if err == nil {
		return nil
	}
	return &TerminalError{Err: err}
}

// Terminalf is Terminal(fmt.Errorf(format, args...)).
func Terminalf(format string, args ...any) error { return Terminal(fmt.Errorf(format, args...)) }

// IsTerminal reports whether err (or anything it wraps) is a TerminalError, or ace's refusal of a working copy
// as its agent left it (workspace.ErrRefused), or of a box the configuration asks for (runbox.ErrNoBox): trying
// again finds it the same.
func IsTerminal(err error) bool {
	var t *TerminalError
	return errors.As(err, &t) || errors.Is(err, workspace.ErrRefused) || errors.Is(err, runbox.ErrNoBox)
}

// stepTimeout bounds one visit of a step. Waiting steps only look and return (monitor, waiting_input); the
// others do one piece of work, the longest a clone or a push of a large repository.
func stepTimeout(s Step) time.Duration {
	switch s {
	case StepPrepare, StepFinalize:
		return 15 * time.Minute
	case StepMonitor, StepWaitingInput, StepFollowPR:
		return 2 * time.Minute
	default:
		return 5 * time.Minute
	}
}

// humanAsk is a runner's report that its agent waits for a human: msg is what the issue is asked, screen what
// the agent shows (its screen, its last words; empty when there is none to show).
type humanAsk struct {
	msg, screen string
	// inWords parks the run on what its agent said in words (toHumanInWords), not on a screen only its process
	// shows.
	inWords bool
	// asked is what the runner changes of the run once the human was asked, and only then: asking fails on a
	// tracker error, and the next visit, its retry, must find the run as this one did.
	asked func()
}

// askFor is a runner's report that a human is to be asked msg, with screen.
func askFor(msg, screen string) Result {
	return Result{ask: &humanAsk{msg: msg, screen: screen}}
}

// askInWords is askFor for an agent that said msg's matter in words (toHumanInWords).
func askInWords(msg, screen string) Result {
	return Result{ask: &humanAsk{msg: msg, screen: screen, inWords: true}}
}

// then is the report res with f done once the human was asked.
func (res Result) then(f func()) Result {
	if res.ask != nil {
		a := *res.ask
		a.asked = f
		res.ask = &a
	}
	return res
}

// What the monitor may decide on its agent (State.Tell), for the tell_agent step (node_tell.go).
const (
	tellIdle    = "idle"    // it sits at its prompt without having finished: a nudge, or a human asked
	tellCompact = "compact" // its CLI's compaction command: its transcript grew past monitor.compact_threshold
	tellStopped = "stopped" // its CLI stopped its turn and says a message goes on (Profile.TurnStopped): a nudge now
	tellSubmit  = "submit"  // the prompt sits in its composer, unsent (Profile.PromptUnsent): Enter again
	tellStuck   = "stuck"   // no sign of work for stuck_after, its screen busy or unknown: a human asked (askStuck)
	// The keys of a menu the look found to answer, sent by tell_agent only on a screen read then that still shows
	// it (runner_tmux_tell.go).
	tellDialog    = "dialog"     // a dialog settled on screen (State.Dialog*): its answer
	tellApprove   = "approve"    // a permission prompt, auto_approve set: its "allow once" option
	tellLimitMenu = "limit-menu" // the menu a usage limit opened: the option that keeps the user's choice
	// An agent gone: what it left is finalized, or it is restarted (start_session), or the run fails (onAgentExit).
	tellExited = "exited" // its pane dead, or its session not in the pane list
	tellGone   = "gone"   // its session went after the pane list was read (its tmux server killed or crashed)
)

// tellAgent is the monitor's decision to act on its idle agent: the tell_agent step acts on what.
func tellAgent(r *store.Run, what string) Result {
	r.State.Tell = what
	return Goto(StepTell)
}

// Runners report, nodes decide: a runner's look returns what it saw that is not its own business — a usage limit
// (Result.limit), an agent waiting for a human (Result.ask) — and the node that called it decides on it here,
// after every call of a runner that returns a Result. A runner never posts on the issue nor pauses a run itself,
// and the node does not post either: the question goes to the ask_human step (node_ask.go).

// reported decides on what a runner returned: a usage limit it saw is decided on (usageLimits.reported); a human
// it asks for is kept in the run for the ask_human step, which posts the question, and what the runner changes
// once it asked (humanAsk.asked) is done with the move, saved in the same write; anything else passes through.
func (e *Engine) reported(ctx context.Context, r *store.Run, res Result, err error) (Result, error) {
	if err != nil {
		return res, err
	}
	if a := res.ask; a != nil {
		if a.asked != nil {
			a.asked()
		}
		r.State.Ask = &store.Ask{Message: a.msg, Screen: a.screen, InWords: a.inWords}
		return Goto(StepAsk).With(store.StatusActive), nil
	}
	return e.limits.reported(ctx, r, res, nil)
}
