// Package agentcheck is `ace agents check`: it verifies an agent CLI installed on this machine, offline, by
// driving it through ace the way a run does — start and first-run screens, prompt delivery, a tool approval, a
// question and its answer, a commit, a usage read, and a usage-limit reply — against the scripted model server
// built into ace, in a throwaway repository and a fresh home, inside a loopback-only network namespace where
// the kernel allows one. Users run it after an upgrade: a release that moved a screen fails here, with the
// screen saved, instead of in their runs.
package agentcheck

import (
	"time"

	"github.com/aceworks/ace/pkg/runbox"
)

// Step is one thing the check verified, in the order a run meets them.
type Step struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Screen is the file holding the agent's screen when the step failed.
	Screen string `json:"screen,omitempty"`
}

// The steps, in order. A step after a failure that its phase did not reach is reported not reached.
const (
	StepStart    = "start"    // first-run screens passed, the prompt taken
	StepTask     = "task"     // the model read ACE_TASK.md with the CLI's own file tool
	StepApproval = "approval" // a tool that needs approval ran (ace answered the permission by meaning)
	StepQuestion = "question" // the agent's question reached the issue, the human's answer reached the model
	StepCommit   = "commit"   // the agent's own commit on the branch, a pull request opened
	StepUsage    = "usage"    // ace read the run's tokens from the CLI, equal to what the model billed
	StepLive     = "live"     // the run again over the CLI's live protocol (runner "live"): every step held
	StepGateway  = "gateway"  // the run again behind a gateway that does not pass side requests: every step held
	StepLimit    = "limit"    // a usage-limit reply paused the run with a resume time
)

// Report is what one phase of the check of one agent found.
type Report struct {
	Agent   string        `json:"agent"`
	Version string        `json:"version"`
	Tested  string        `json:"tested"` // the range ace's own tests run, e.g. "2.1.197–2.1.331"
	Place   int           `json:"place"`  // -1 older than tested, 0 inside, +1 newer
	Phase   string        `json:"phase"`
	Network string        `json:"network"` // "loopback-only namespace", or why the check ran without one
	Steps   []Step        `json:"steps"`
	Error   string        `json:"error,omitempty"` // the phase could not run at all
	Took    time.Duration `json:"took"`
	At      time.Time     `json:"at"`
	Dir     string        `json:"dir"` // the phase's files: log, screens, working copy
}

// OK reports whether every step held.
func (r Report) OK() bool {
	if r.Error != "" || len(r.Steps) == 0 {
		return false
	}
	for _, s := range r.Steps {
		if !s.OK {
			return false
		}
	}
	return true
}

// Result is the check of one agent: its phases' reports, and whether it reaches what the user's configuration
// names (the one thing checked online: a connection to each endpoint, no request).
type Result struct {
	Agent     string              `json:"agent"`
	Version   string              `json:"version"`
	CheckedAt time.Time           `json:"checked_at"`
	Reports   []Report            `json:"reports"`
	Reach     []runbox.ReachCheck `json:"reach,omitempty"`
}

// OK reports whether every phase held and the box keeps none of the agent's endpoints out (one the network
// does not answer now is a warning: a gateway down now may be up for the run).
func (r Result) OK() bool {
	for _, p := range r.Reports {
		if !p.OK() {
			return false
		}
	}
	for _, c := range r.Reach {
		if !c.OK && c.Config {
			return false
		}
	}
	return len(r.Reports) > 0
}

// Steps are the steps of every phase, in order.
func (r Result) Steps() []Step {
	var out []Step
	for _, p := range r.Reports {
		out = append(out, p.Steps...)
	}
	return out
}
