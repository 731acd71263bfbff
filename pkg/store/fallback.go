package store

import (
	"slices"
	"time"
)

// FallbackState is what ace did when the run's agent paused at a usage limit that resets too far away
// (agent.fallback): each handover of the working copy to another agent, oldest first, and the one decided on and
// not yet made (the handover step makes it; a crash between leaves it here).
type FallbackState struct {
	Handovers []Handover `json:"handovers,omitzero"`
	Pending   *Handover  `json:"pending,omitzero"`
}

// Handover is one change of a run's agent at a usage limit.
type Handover struct {
	// From is the agent that stopped at the limit, To the one that took the run over, At when.
	From string    `json:"from"`
	To   string    `json:"to"`
	At   time.Time `json:"at"`
	// Until is when From's limit resets (as the pause would have resumed); Message is what From said. Shared is
	// set when another run on From hit the limit: only a run that hit it itself says when From is free again.
	Until   time.Time `json:"until,omitzero"`
	Message string    `json:"message,omitzero"`
	Shared  bool      `json:"shared,omitzero"`
	// Usage is what the run's agents had spent up to the handover: the new agent's own records start at zero.
	Usage *Usage `json:"usage,omitzero"`
}

// Had reports whether the run has had agent since its first handover: as the agent it started with or as one it
// was handed to.
func (f *FallbackState) Had(agent string) bool {
	if f == nil {
		return false
	}
	return slices.ContainsFunc(f.Handovers, func(h Handover) bool { return h.From == agent || h.To == agent })
}

// Last is the latest handover; ok is false when there was none.
func (f *FallbackState) Last() (h Handover, ok bool) {
	if f == nil || len(f.Handovers) == 0 {
		return Handover{}, false
	}
	return f.Handovers[len(f.Handovers)-1], true
}
