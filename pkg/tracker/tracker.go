// Package tracker is what ace's trackers share: issues, comments, pull requests and their states as ace reads
// them, the errors every tracker wraps, and what a tracker is opened with (Setup). Each tracker is a folder below
// (GitHub: tracker/github; a folder of Markdown files: tracker/local) that service lists; the parts that use a
// tracker declare what they use of it (workflow.Tracker, workspace.Auth, eval.Tracker).
package tracker

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Issue is an issue (or, in listings, a pull request: IsPR).
type Issue struct {
	Repo      string
	Number    int
	Title     string
	Body      string
	Author    string
	URL       string
	State     string // "open" or "closed"
	Labels    []string
	CreatedAt time.Time
	UpdatedAt time.Time
	IsPR      bool
}

// Comment is an issue comment.
type Comment struct {
	ID        int64
	Author    string
	Body      string
	URL       string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Repo is what ace needs to know about a repository.
type Repo struct {
	FullName      string
	DefaultBranch string
	CloneURL      string
	Private       bool
}

// PullRequest is an opened pull request.
type PullRequest struct {
	Number int
	URL    string
	State  string
	Head   string
	Base   string
	Title  string
	Body   string
	Draft  bool
}

// NewPR is a pull request to open.
type NewPR struct {
	Title string
	Body  string
	Head  string
	Base  string
	Draft bool
}

// Permission is a user's role on a repository, as GitHub names them.
type Permission string

// Permissions from weakest to strongest.
const (
	PermNone     Permission = "none"
	PermRead     Permission = "read"
	PermTriage   Permission = "triage"
	PermWrite    Permission = "write"
	PermMaintain Permission = "maintain"
	PermAdmin    Permission = "admin"
)

var permOrder = []Permission{PermNone, PermRead, PermTriage, PermWrite, PermMaintain, PermAdmin}

// AtLeast reports whether p is min or stronger. Unknown permissions count as none.
func (p Permission) AtLeast(min Permission) bool {
	return slices.Index(permOrder, p) >= slices.Index(permOrder, min) && slices.Index(permOrder, p) >= 0
}

// Sentinel errors every tracker wraps.
var (
	ErrNotFound     = errors.New("not found")
	ErrUnauthorized = errors.New("unauthorized")
	ErrForbidden    = errors.New("forbidden")
	ErrValidation   = errors.New("rejected as invalid")
	// ErrUnreachable is a check of the tracker (ace doctor) that could not tell: the tracker did not answer, or
	// answered in a way that says nothing of ace's credential.
	ErrUnreachable = errors.New("unreachable")
)

// Error is a tracker failure with its HTTP status (0 for non-HTTP trackers).
type Error struct {
	Status  int
	Op      string
	Message string
	Kind    error // one of the sentinels, or nil
}

func (e *Error) Error() string {
	msg := e.Op
	if e.Status != 0 {
		msg += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Is matches the sentinel the error is of.
func (e *Error) Is(target error) bool { return e.Kind != nil && target == e.Kind }

// SplitRepo splits "owner/name".
func SplitRepo(repo string) (owner, name string, err error) {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("repository %q is not owner/name", repo)
	}
	return owner, name, nil
}
