package workflow

import (
	"sync"
	"sync/atomic"

	"github.com/aceworks/ace/pkg/runbox"
	"github.com/aceworks/ace/pkg/store"
)

// EventKind names what happened to a run. Kinds are stored as text in the run's event log; they never change
// meaning once released.
type EventKind string

// The kinds of run events.
const (
	EventStep        EventKind = "step"         // the run moved to Progress.Step
	EventRetry       EventKind = "retry"        // a step failed and will be tried again
	EventCreated     EventKind = "created"      // a new attempt was opened
	EventWorkspace   EventKind = "workspace"    // the working copy was prepared
	EventSession     EventKind = "session"      // the agent was started, restarted or re-attached
	EventDialog      EventKind = "dialog"       // a first-run dialog was answered
	EventApproved    EventKind = "approved"     // a permission dialog was answered (auto_approve)
	EventPrompt      EventKind = "prompt"       // the task prompt was delivered
	EventNudge       EventKind = "nudge"        // an idle agent was nudged
	EventCompact     EventKind = "compact"      // the agent's context was compacted
	EventQuestion    EventKind = "question"     // a human was asked (needs input)
	EventAnswer      EventKind = "answer"       // a human's answer reached the agent
	EventWithdrawn   EventKind = "withdrawn"    // the question a run waited on needs no answer: the agent withdrew it (live)
	EventComment     EventKind = "comment"      // a comment was relayed or left alone
	EventAgentExited EventKind = "agent-exited" // the agent's process ended
	EventDone        EventKind = "done"         // the agent said it is done
	EventPushed      EventKind = "pushed"       // the branch was pushed
	EventPullRequest EventKind = "pull-request" // the pull request was opened or found
	EventMemory      EventKind = "memory"       // the repository's memory was read or written
	EventMCP         EventKind = "mcp"          // MCP configuration notes
	EventTurn        EventKind = "turn"         // a headless or live turn ended
	EventMoved       EventKind = "moved"        // the run moved to another host (its host stopped answering)
	EventAgentFailed EventKind = "agent-failed" // a headless turn ended in an error
	EventLimit       EventKind = "limit"        // a usage limit paused the run, or it resumed (limits.go)
	EventBudget      EventKind = "budget"       // the run reached its budget and waits for a human (budget.go)
	EventFollow      EventKind = "follow"       // the pull request is followed, or a comment on it left alone
	EventRound       EventKind = "round"        // a follow-up round (CI, review, conflict, /ace) was sent
	EventFenced      EventKind = "fenced"       // the host's fence stopped the agent; it starts again on the same host
	EventReleased    EventKind = "released"     // an idle agent was stopped: its slot was needed, or pr.release_after passed
	EventQueued      EventKind = "queued"       // text sent to a released agent waits for its next start (sent.go)
	EventSlotWait    EventKind = "slot-wait"    // the run waits for a slot on its host (slots.go)
	EventNeedsHuman  EventKind = "needs-human"  // follow-up rounds stopped: a human is needed on the PR
	EventCleaned     EventKind = "cleaned"      // the working copy was removed after the merge
	EventBestOf      EventKind = "best-of"      // a best-of-N attempt started, ended or was chosen (bestof.go)
	// EventLiveFallback: the CLI's live protocol failed its handshake; the run goes on in the tmux runner.
	EventLiveFallback EventKind = "live-fallback"
	EventSandbox      EventKind = runbox.EventSandbox // the agent was started boxed, or unboxed and why
	EventEgress       EventKind = runbox.EventEgress  // the box's proxy refused a connection, or let a destination out
	// EventBoxFile: the box kept the agent from a path — hidden, a write outside its own, another process's /proc
	// entry — or cannot record such attempts (package runbox).
	EventBoxFile EventKind = runbox.EventBoxFile
	// EventFileRefused: ace would not read or write a file the agent controls — a link out of its tree, not a
	// regular file, over its cap (agent_files.go).
	EventFileRefused EventKind = "file-refused"
	// EventStuck: the agent's screen said it works, or nothing ace knows, while every sign of work stayed flat for
	// monitor.stuck_after; a human was asked (liveness.go). Data holds the signals.
	EventStuck EventKind = "stuck"
	// EventTmux: the tmux server the run's agent lived on had been left unusable by a dead ace process; ace
	// killed it, and the agent starts again on a fresh one (tmux_recovery.go).
	EventTmux EventKind = "tmux"
)

// Progress is one typed event of a run, as the engine publishes it in process: to `ace run`'s display, the
// dashboard's live stream, notifications.
type Progress struct {
	Run     *store.Run // a copy: subscribers may keep it
	Kind    EventKind
	Step    Step
	Message string
}

// bus fans run events out to subscribers. A subscriber that does not keep up loses events (counted), never
// slows a run down.
type bus struct {
	mu      sync.Mutex
	next    int
	subs    map[int]chan Progress
	dropped atomic.Int64
}

func (b *bus) publish(p Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ch := range b.subs {
		select {
		case ch <- p:
		default:
			b.dropped.Add(1)
		}
	}
}
