package store

import "time"

// Best-of-N (workflow bestof.go). A run that works its issue best-of-N is the parent: it claims the issue, owns
// its labels, status comment and pull request, and starts N attempts, each a run of its own (its row, job, slot,
// working copy, branch and agent) that goes from prepare_workspace to its push and stops there. Attempts are
// numbered below zero — attempt k of the parent's attempt A is -(10·A + k) (AttemptNumber) — so that the issue's
// latest run (LatestRun, LatestPerIssue, ace show N) is always a parent or a plain run, and a later attempt at
// the issue takes A+1 as before.

// AttemptNumber is the stored attempt of best-of attempt k (1…9) of the run whose attempt is parent.
func AttemptNumber(parent, k int) int { return -(10*parent + k) }

// BestOfState is a parent's: how many attempts, which runs they are, and what was chosen.
type BestOfState struct {
	// N is the number of attempts; Why what asked for it (agent.attempts, a label).
	N   int    `json:"n"`
	Why string `json:"why,omitzero"`
	// Attempts are the attempts' run IDs, attempt k at index k-1, each recorded once its run exists.
	Attempts []int64 `json:"attempts,omitzero"`
	// Since is when the attempts started: monitor.timeout bounds the wait for all of them from it. Ended is how
	// many had ended when the status comment last said so.
	Since time.Time `json:"since,omitzero"`
	Ended int       `json:"ended,omitzero"`
	// Results are the attempts as judged when the last ended (or the wait timed out), in order of k; Winner is
	// the k the pull request came from (0: none could open one).
	Results []AttemptResult `json:"results,omitzero"`
	Winner  int             `json:"winner,omitzero"`
}

// AttemptState is an attempt's: whose it is and what its branch came to.
type AttemptState struct {
	Parent int64 `json:"parent"`
	K      int   `json:"k"`
	// Pushed is set once its branch is pushed; Files and Lines are its change against the base then.
	Pushed bool `json:"pushed,omitzero"`
	Files  int  `json:"files,omitzero"`
	Lines  int  `json:"lines,omitzero"`
}

// AttemptResult is one attempt as the parent judged it.
type AttemptResult struct {
	K      int    `json:"k"`
	Run    int64  `json:"run"`
	Agent  string `json:"agent"`
	Branch string `json:"branch,omitzero"`
	// Status is the attempt's run's; Error why it failed.
	Status Status `json:"status"`
	Error  string `json:"error,omitzero"`
	// Verify is "passed", "failed" or "" (the repository has no verify command, or it never ran).
	Verify string `json:"verify,omitzero"`
	Pushed bool   `json:"pushed,omitzero"`
	Files  int    `json:"files,omitzero"`
	Lines  int    `json:"lines,omitzero"`
	Usage  *Usage `json:"usage,omitzero"`
}
