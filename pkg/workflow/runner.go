package workflow

import (
	"context"
	"errors"

	"github.com/aceworks/ace/pkg/store"
)

// Runner drives a run's agent. ace has three: the tmux runner (runner_tmux*.go: the agent's own terminal UI in a
// tmux session, read from its screen), the headless runner (runner_exec*.go: one turn at a time through the
// agent's JSON stream, under a supervisor) and the live runner (runner_live*.go: one long-lived conversation over
// the CLI's own protocol, held by a host in the run's tmux session). The graph's nodes and ace's commands never
// ask which one a run has: they call these methods. A runner reports what it saw that is not its own business —
// a usage limit, a human to ask (Result.limit, Result.ask) — and the node that called it decides
// (Engine.reported, step.go). A new runner is its files implementing Runner, runnerDefaults embedded for the methods it
// has nothing to do in, its kind (runner_kinds.go: its name and description) with a line in runnerKinds, and its
// making in withRunners.
type Runner interface {
	Describer
	// Start opens the agent for the run, or re-attaches to the one a previous ace process left running (the
	// start_session step).
	Start(ctx context.Context, r *store.Run) (Result, error)
	// Deliver gives the agent its task (the deliver_prompt step).
	Deliver(ctx context.Context, r *store.Run) (Result, error)
	// Busy is the monitor's first look: while the agent is busy nothing else is decided (it may still be writing
	// .ace/DONE or its last commit). busy false lets the monitor go on.
	Busy(ctx context.Context, r *store.Run) (res Result, busy bool, err error)
	// Observe is the monitor's look once neither .ace/DONE nor .ace/QUESTION is there: the agent idle, at a
	// dialog, asking on its screen, at a usage limit, or gone — and what to do about it (nudge, answer, restart,
	// compact), or what the monitor is to act on (a human to ask, a limit: Engine.reported).
	Observe(ctx context.Context, r *store.Run) (Result, error)
	// Type gives text to the live agent now; Queue keeps it in the run for the agent's next turn. A runner does
	// one or the other (the other is runnerDefaults' no-op), so that callers do both: Type once, Queue in a change of the run
	// that may be redone on a fresh copy (updateFresh).
	Type(ctx context.Context, r *store.Run, text string) error
	Queue(r *store.Run, text string)
	// FollowUp gives the agent a new round's prompt (a pull request's, a failed verify's), restarting it in the
	// same working copy when it is gone.
	FollowUp(ctx context.Context, r *store.Run, prompt, delivered string) (Result, error)
	// Continue resumes the agent after a usage limit with msg.
	Continue(ctx context.Context, r *store.Run, msg string) error
	// Stop ends the agent and every process it started, if it is still there.
	Stop(ctx context.Context, r *store.Run) error
	// Working reports whether the agent is in the middle of a turn (its screen busy, a headless turn or a live
	// turn running): stopped now, it would lose the turn's end from its conversation.
	Working(ctx context.Context, r *store.Run) bool
	// Live returns ErrNoSession unless the agent can be given text (ace send, ace nudge).
	Live(ctx context.Context, r *store.Run) error
	// Screen returns the agent's current screen with historyLines of scrollback (ErrHeadless without one).
	Screen(ctx context.Context, r *store.Run, historyLines int) (string, error)
	// Abandon undoes what a visit of mine started that nobody else knows of, when its change of the run was lost
	// to another process (fresh, the run as that one wrote it).
	Abandon(mine, fresh *store.Run)
}

// Describer is what people are told about a run's agent: it needs no engine, so `ace ls`, `ace attach`, `ace
// run` and the dashboard use it from a stored run alone. A runner's kind implements it (runner_kinds.go).
type Describer interface {
	// Name is the runner's name in config (agents.X.runner) and in the store.
	Name() string
	// Where says where the run's agent lives: "tmux session ace-hello-1", "headless conversation 5f3c…".
	Where(r *store.Run) string
	// Session is the short form for a table column ("-" when there is none yet).
	Session(r *store.Run) string
	// Watch is the command that shows what the agent is doing.
	Watch(r *store.Run) string
	// HasScreen reports whether the agent has a terminal screen to attach to or peek at.
	HasScreen() bool
	// Delivery says how text given to the agent reaches it, for events: "typed into the session".
	Delivery() string
	// IdleProcess reports whether the agent's process lives on while the run waits (its slot's idle agent, which
	// may be kept or released: tmux, live), rather than ending with its turn (exec).
	IdleProcess() bool
}

// runHost is what a runner needs of the engine's core, in the spirit of tailscale's ipnext.Host: the run's events
// (recorded as a step records them, its watchers told) and the engine's rulings on a run — monitor.timeout, whether
// an agent gone may start again (node_monitor.go), whether it left work, a file the run cannot go on without
// (engine_files.go). The Engine satisfies it; everything else a runner uses is a part, given to it as such
// (withRunners).
type runHost interface {
	event(ctx context.Context, r *store.Run, kind EventKind, msg string)
	eventData(ctx context.Context, r *store.Run, kind EventKind, msg, data string)
	timedOut(r *store.Run, last string) bool
	mayRestart(r *store.Run, c exitCause) bool
	restarted(ctx context.Context, r *store.Run, c exitCause, did string)
	leftWork(ctx context.Context, r *store.Run) (bool, error)
	needFile(ctx context.Context, r *store.Run, what string, err error) error
}

// ErrNoSession is returned by operations that need the agent's live session when there is none.
var ErrNoSession = errors.New("the run has no live agent session")

// ErrHeadless is returned by operations that need a terminal screen when the run has none.
var ErrHeadless = errors.New("the run is headless (runner exec): there is no screen; read its transcript with `ace logs`")
