package tracker

import (
	"context"
	"time"
)

// PRState is everything ace reads about an open pull request to carry it to merge: whether it ended, whether it
// conflicts, what failed on its head commit, and what reviewers and commenters said.
type PRState struct {
	Number int
	URL    string
	State  string // "open" or "closed"
	Merged bool
	// Mergeable is nil while GitHub is still computing it; MergeableState is "clean", "dirty" (a conflict),
	// "blocked", "unstable", "behind", "unknown", ….
	Mergeable      *bool
	MergeableState string
	HeadSHA        string
	HeadRef        string
	Base           string

	// FailedChecks are check runs on HeadSHA that concluded failure, timed_out, startup_failure or
	// action_required; FailedStatuses the commit statuses in state failure or error. Pending is set while a
	// check or status has not concluded yet.
	FailedChecks   []FailedCheck
	FailedStatuses []FailedStatus
	Pending        bool

	Reviews        []Review
	ReviewComments []ReviewComment
	Comments       []Comment // the pull request's conversation (issue comments), oldest first
}

// Conflicting reports whether the pull request cannot be merged because of a conflict with its base.
func (p *PRState) Conflicting() bool {
	return (p.Mergeable != nil && !*p.Mergeable && p.MergeableState != "blocked") || p.MergeableState == "dirty"
}

// CheckFailed reports whether a completed check's conclusion asks for a change: failure, timed_out,
// startup_failure and action_required do; success, cancelled, neutral and skipped do not.
func CheckFailed(conclusion string) bool {
	switch conclusion {
	case "failure", "timed_out", "startup_failure", "action_required":
		return true
	}
	return false
}

// FailedCheck is a failed check run with what it said.
type FailedCheck struct {
	ID         int64
	Name       string
	Conclusion string
	Title      string
	Summary    string
	Text       string
	// Annotations are the check's file annotations (path:line and message).
	Annotations []Annotation
	// LogTail is the end of the check's Actions job log, at most the tracker's log budget ("" when there is none).
	LogTail string
	URL     string
}

// Annotation is one check-run annotation.
type Annotation struct {
	Path      string
	StartLine int
	EndLine   int
	Level     string // notice, warning, failure
	Title     string
	Message   string
}

// FailedStatus is a commit status (the older statuses API) in state failure or error.
type FailedStatus struct {
	Context     string
	State       string
	Description string
	TargetURL   string
}

// Review is a pull request review.
type Review struct {
	ID          int64
	Author      string
	State       string // APPROVED, CHANGES_REQUESTED, COMMENTED, DISMISSED, PENDING
	Body        string
	SubmittedAt time.Time
}

// ReviewComment is a comment on a line of the pull request's diff.
type ReviewComment struct {
	ID        int64
	ReviewID  int64
	Author    string
	Body      string
	Path      string
	Line      int
	DiffHunk  string
	InReplyTo int64
	CreatedAt time.Time
}

// PRReader is a tracker that can read a pull request's whole state. GitHub implements it, and the local folder
// tracker in part (state, head and checks); a tracker that does not, has its pull requests end a run as soon as
// they are opened.
type PRReader interface {
	PRState(ctx context.Context, repo string, number int) (*PRState, error)
}
