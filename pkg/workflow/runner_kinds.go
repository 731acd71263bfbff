package workflow

import (
	"fmt"

	"github.com/aceworks/ace/pkg/agents"
	"github.com/aceworks/ace/pkg/store"
)

// The runners as people see them: each runner's kind names it and describes a stored run of it (Describer),
// which needs no engine and none of the runner's parts, so that ace ls, ace attach, ace run, the dashboard and
// the status comment read it from a stored run alone. The runner embeds its kind; withRunners makes the engine's
// own runner of each kind (Engine.runner finds it by name).

// runnerKinds lists ace's runners by name (store.RunnerTmux…), the default first: a run stored without a runner,
// or with one this ace does not know, is a tmux run, as every run was before there was a choice. A new runner is
// its files, its kind here and a line in this list, and its making in withRunners.
func runnerKinds() []Describer { return []Describer{tmuxKind{}, execKind{}, liveKind{}} }

// kindOf returns the kind named name, the default when none is.
func kindOf(name string) Describer {
	kinds := runnerKinds()
	for _, k := range kinds {
		if k.Name() == name {
			return k
		}
	}
	return kinds[0]
}

// runnerOf names the runner an agent's profile asks for.
func runnerOf(p agents.Profile) string { return kindOf(p.Runner).Name() }

// Describe tells about a stored run's agent.
func Describe(r *store.Run) Describer { return kindOf(r.Runner) }

// tmuxKind is the tmux runner (runner_tmux.go): the agent's own terminal UI in a tmux session.
type tmuxKind struct{}

func (tmuxKind) Name() string { return store.RunnerTmux }

func (tmuxKind) Where(r *store.Run) string {
	if r.Session == "" {
		return "no tmux session yet"
	}
	return "tmux session " + r.Session
}

func (tmuxKind) Session(r *store.Run) string {
	if r.Session == "" {
		return "-"
	}
	return r.Session
}

func (tmuxKind) Watch(r *store.Run) string { return fmt.Sprintf("ace attach %d", r.Issue) }

func (tmuxKind) HasScreen() bool { return true }

func (tmuxKind) Delivery() string { return "typed into the session" }

func (tmuxKind) IdleProcess() bool { return true }

// execKind is the headless runner (runner_exec.go): one turn at a time under a supervisor, read from its
// JSON stream.
type execKind struct{}

func (execKind) Name() string { return store.RunnerExec }

func (execKind) Where(r *store.Run) string {
	if r.AgentSessionID != "" {
		return "headless conversation " + r.AgentSessionID
	}
	return "headless, no conversation yet"
}

func (execKind) Session(*store.Run) string { return "headless" }

func (execKind) Watch(r *store.Run) string { return fmt.Sprintf("ace logs %d -f", r.Issue) }

func (execKind) HasScreen() bool { return false }

func (execKind) Delivery() string { return "queued as the next turn of the conversation" }

func (execKind) IdleProcess() bool { return false }

// liveKind is the live runner (runner_live.go): one conversation held by a host in the run's tmux session.
type liveKind struct{}

func (liveKind) Name() string { return store.RunnerLive }

func (liveKind) Where(r *store.Run) string {
	if r.Session == "" {
		return "live, no conversation yet"
	}
	return "live conversation in tmux session " + r.Session
}

func (liveKind) Session(r *store.Run) string {
	if r.Session == "" {
		return "-"
	}
	return r.Session
}

func (liveKind) Watch(r *store.Run) string { return fmt.Sprintf("ace attach %d", r.Issue) }

func (liveKind) HasScreen() bool { return true }

// Delivery: an answer goes to the request it answers (a permission, the question tool) or, for a question of
// ace's own protocol, as a user message.
func (liveKind) Delivery() string { return "given to the live conversation" }

func (liveKind) IdleProcess() bool { return true }
